// JSON → Problem (docs/PROBLEM.md#all-keys-at-a-glance): every key read with its JSON
// path, converted to math orientation, and checked against the others so the pipelines
// can trust it.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "attn_trace/errors.hpp"
#include "attn_trace/problem.hpp"
#include "attn_trace/trace.hpp"
#include "json/json_reader.hpp"
#include "json/json_text.hpp"
#include "array_source.hpp"
#include "checkpoint_reader.hpp"
#include "mask_reader.hpp"
#include "mla_reader.hpp"

namespace attn_trace {

using nlohmann::json;

namespace {

const std::vector<std::string> known_keys = {
    "title", "tokens", "source_tokens", "X", "X_source", "W_Q", "W_K", "W_V", "b_Q", "b_K", "b_V", "W_O", "b_O",
    "weights_layout", "in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias", "Q", "K", "V",
    "heads", "kv_heads", "scale", "mask", "empty_rows", "lengths", "rope", "positions", "source_positions",
    "softcap", "alibi", "expect", "allow_nonfinite", "sparse", "dropout", "mla", "d_out", "checkpoint"};

// The keys whose numbers are inputs (docs/PROBLEM.md#non-finite-inputs-allow_nonfinite):
// a non-finite number in them is an error unless allowed. Masks are not among them: −∞ is
// their job.
const std::vector<std::string> input_keys = {"X", "X_source", "Q", "K", "V", "W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O",
                                             "in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"};

// The JSON path and text of the first "inf"/"-inf"/"nan" string in a nested array
// or a {"shape", "data"} object (JSON numbers themselves are always finite).
std::optional<std::string> first_nonfinite_cell(const json& value, const std::string& path) {
    if (value.is_string()) {
        const auto text = value.get<std::string>();
        if (text == "inf" || text == "+inf" || text == "-inf" || text == "nan") return fmt::format("{} is {}", path, text);
        return std::nullopt;
    }
    if (value.is_object()) return value.contains("data") ? first_nonfinite_cell(value["data"], path + ".data") : std::nullopt;
    if (!value.is_array()) return std::nullopt;
    for (std::size_t i = 0; i < value.size(); ++i)
        if (auto found = first_nonfinite_cell(value[i], fmt::format("{}[{}]", path, i))) return found;
    return std::nullopt;
}


// Splits a 3-D (H, rows, width) per-head array into one (rows, H·width) matrix,
// heads side by side: the layout every pipeline uses.
Matrix heads_side_by_side(const NumericArray& array) {
    const std::size_t heads = array.shape[0], rows = array.shape[1], width = array.shape[2];
    Matrix out(rows, heads * width);
    for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < width; ++j) out(i, h * width + j) = array.data[(h * rows + i) * width + j];
    return out;
}

// X or X_source as its sequences: (n, d) is one, (B, n, d) is B (declared_shapes
// refused any other rank before the numbers were read).
std::vector<Matrix> batch_of_matrices(NumericArray array) {
    std::vector<Matrix> out;
    if (array.shape.size() == 2) {
        out.push_back(Matrix(array.shape[0], array.shape[1], std::move(array.data)));
        return out;
    }
    const std::size_t stride = array.shape[1] * array.shape[2];
    for (std::size_t b = 0; b < array.shape[0]; ++b) {
        Matrix item(array.shape[1], array.shape[2]);
        std::copy_n(array.data.begin() + static_cast<long>(b * stride), stride, item.data().begin());
        out.push_back(std::move(item));
    }
    return out;
}

class ProblemLoader {
public:
    ProblemLoader(const json& root, const std::string& file, bool allow_nonfinite, ArraySource& arrays) : root_(root), reader_(file) {
        reader_.set_array_files(arrays.hooks(reader_));
        // Numbers read from .npy and safetensors files are screened as the file's own are.
        arrays.on_nonfinite([this](const std::string& where, double x) { report_nonfinite(where, std::isnan(x) ? "nan" : x < 0 ? "-inf" : "inf"); });
        problem_.file = file;
        problem_.allow_nonfinite = allow_nonfinite;
    }

    Problem load() {
        if (!root_.is_object()) reader_.fail("$", "expected a JSON object with the problem's keys, found " + describe_json(root_));
        check_known_keys();
        if (has("title")) problem_.title = reader_.string(root_["title"], "$.title");
        check_finite_inputs();
        read_heads();
        read_layout();
        check_input_keys();
        // Every shape is checked against the rest of the problem before any number is
        // made: a random V of 16384 × 16384 beside a K of 1 row is refused at once,
        // not after generating its 2 GiB.
        derive_sizes(declared_shapes());
        read_projections();
        read_direct_qkv();
        read_labels();
        read_options();
        read_masks();
        read_position_features();
        read_d_out();
        read_expectations();
        validate_masks(problem_);
        return std::move(problem_);
    }

private:
    bool has(const char* key) const { return root_.contains(key); }
    const json& at(const char* key) const { return root_[key]; }
    static std::string path_of(const std::string& key) { return "$." + key; }

    void check_known_keys() {
        for (const auto& [key, value] : root_.items()) {
            if (std::find(known_keys.begin(), known_keys.end(), key) != known_keys.end()) continue;
            const auto near = nearest_word(key, known_keys);
            reader_.fail(path_of(key), "unknown key \"" + key + "\"" + (near.empty() ? "" : " (did you mean \"" + near + "\"?)"));
        }
    }

    // By default a NaN or infinity in an input is a mistake in the file;
    // "allow_nonfinite" asks to trace how it spreads instead (the note says so;
    // docs/PROBLEM.md#non-finite-inputs-allow_nonfinite).
    void check_finite_inputs() {
        if (has("allow_nonfinite")) problem_.allow_nonfinite |= reader_.boolean(at("allow_nonfinite"), "$.allow_nonfinite");
        // The inputs, and the MLA matrices inside "mla".
        std::vector<std::pair<const json*, std::string>> inputs;
        for (const auto& key : input_keys)
            if (has(key.c_str())) inputs.push_back({&at(key.c_str()), path_of(key)});
        if (has("mla") && at("mla").is_object())
            for (const auto& [key, value] : at("mla").items()) inputs.push_back({&value, "$.mla." + key});
        for (const auto& [value, path] : inputs) {
            const auto found = first_nonfinite_cell(*value, path);
            if (!found) continue;
            const auto space = found->find(' ');
            report_nonfinite(found->substr(0, space), found->substr(found->rfind(' ') + 1));
            return;  // allowed (else report_nonfinite threw): the note names the first
        }
    }

    // A NaN or infinity at `where` ("$.Q[0][1]"): an error, or the note's first one when allowed.
    void report_nonfinite(const std::string& where, const std::string& word) {
        if (problem_.allow_nonfinite) {
            if (problem_.first_nonfinite.empty()) problem_.first_nonfinite = where + " is " + word;
            return;
        }
        reader_.fail(where, fmt::format("{} in an input matrix: inputs must be finite (a NaN or infinity here spreads to every step that reads it); "
                                        "to trace how it spreads, add \"allow_nonfinite\": true or pass ⟦allow_nonfinite⟧",
                                        word));
    }

    void read_heads() {
        if (has("heads")) problem_.heads = static_cast<int>(reader_.whole_number(at("heads"), "$.heads", 1, 4096));
        problem_.kv_heads = has("kv_heads") ? static_cast<int>(reader_.whole_number(at("kv_heads"), "$.kv_heads", 1, 4096))
                                            : problem_.heads;
        if (problem_.heads % problem_.kv_heads != 0)
            reader_.fail("$.kv_heads", fmt::format("kv_heads must divide heads ({}), found {}", problem_.heads, problem_.kv_heads));
    }

    // A weight in the file's layout, returned in math orientation (d_in, d_out).
    Matrix weight(const json& value, const std::string& path) const {
        Matrix w = reader_.matrix(value, path);
        return torch_layout_ ? w.transposed() : w;
    }

    void read_layout() {
        if (has("weights_layout")) {
            const auto layout = reader_.string(at("weights_layout"), "$.weights_layout");
            if (layout != "math" && layout != "torch")
                reader_.fail("$.weights_layout", "expected \"math\" or \"torch\", found \"" + layout + "\"");
            torch_layout_ = layout == "torch";
        }
        for (const char* key : {"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"})
            if (has(key) && !torch_layout_)
                reader_.fail(path_of(key), "this nn.MultiheadAttention key needs \"weights_layout\": \"torch\"");
    }

    // Which inputs go together: X with its projections, or Q, K, V on their own.
    void check_input_keys() {
        if (has("X_source") && !has("X")) reader_.fail("$.X_source", "X_source (cross-attention) needs X for the queries");
        auto clash = [&](const char* stacked, std::initializer_list<const char*> singles) {
            for (const char* single : singles)
                if (has(stacked) && has(single))
                    reader_.fail(path_of(single), fmt::format("given twice: both \"{}\" and \"{}\"", single, stacked));
        };
        clash("in_proj_weight", {"W_Q", "W_K", "W_V"});
        clash("in_proj_bias", {"b_Q", "b_K", "b_V"});
        clash("out_proj.weight", {"W_O"});
        clash("out_proj.bias", {"b_O"});
        if (!has("Q") && !has("K") && !has("V")) return;
        if (has("X")) reader_.fail("$.Q", "give either X (with W_Q, W_K, W_V) or Q, K, V directly, not both");
        for (const char* key : {"Q", "K", "V"})
            if (!has(key)) reader_.fail(path_of(key), fmt::format("Q, K and V go together: {} is missing", key));
        for (const char* key : {"W_Q", "W_K", "W_V", "b_Q", "b_K", "b_V"})
            if (has(key)) reader_.fail(path_of(key), "projections apply to X; with Q, K, V given directly leave them out");
    }

    // The sizes of the inputs as their shapes declare them, in math orientation,
    // before any of their numbers is read or generated.
    struct Extent {
        std::size_t rows = 0, cols = 0;
    };
    struct DeclaredShapes {
        std::size_t batch = 1;
        Extent x, x_source;                                 // one sequence's
        std::optional<Extent> w_q, w_k, w_v, w_o, q, k, v;  // weights (d_in, d_out); Q, K, V heads side by side
        std::optional<std::size_t> b_q, b_k, b_v, b_o;
    };

    // X or X_source: (n, d), or a batch (B, n, d).
    std::pair<std::size_t, Extent> sequence_shape(const char* key) const {
        const auto s = reader_.declared_shape(at(key), path_of(key));
        if (s.size() == 2) return {1, {s[0], s[1]}};
        if (s.size() == 3) return {s[0], {s[1], s[2]}};
        reader_.fail(path_of(key), fmt::format("expected {} as (n, d) or a batch (B, n, d), found a 1-dimensional array", key));
    }

    std::vector<std::size_t> shape_of_rank(const char* key, std::size_t rank) const {
        return reader_.declared_shape(at(key), path_of(key), rank);
    }

    // A weight in the file's layout, as (d_in, d_out).
    std::optional<Extent> weight_shape(const char* key) const {
        if (!has(key)) return std::nullopt;
        const auto s = shape_of_rank(key, 2);
        return torch_layout_ ? Extent{s[1], s[0]} : Extent{s[0], s[1]};
    }
    std::optional<std::size_t> bias_length(const char* key) const {
        if (!has(key)) return std::nullopt;
        return shape_of_rank(key, 1)[0];
    }

    // Q, K or V: (rows, width), or per head (heads, rows, width) -> (rows, heads · width).
    // A per-head array without "heads" (or "kv_heads") sets it: its first extent is unambiguous.
    Extent direct_shape(const char* key, int& heads, const char* heads_key) {
        const auto s = reader_.declared_shape(at(key), path_of(key));
        if (s.size() == 2) return {s[0], s[1]};
        if (s.size() != 3)
            reader_.fail(path_of(key), fmt::format("expected {} as (rows, width) or per head (heads, rows, width), found 1 dimension", key));
        if (!has(heads_key)) heads = static_cast<int>(std::min<std::size_t>(s[0], 1 << 30));
        if (s[0] != static_cast<std::size_t>(heads))
            reader_.fail(path_of(key), fmt::format("a per-head {} is ({}, rows, width) with {} = {}, found {} heads", key, heads, heads_key, heads, s[0]));
        return {s[1], s[0] * s[2]};
    }

    DeclaredShapes declared_shapes() {
        DeclaredShapes d;
        if (has("X")) {
            std::tie(d.batch, d.x) = sequence_shape("X");
            d.x_source = d.x;
        }
        if (has("X_source")) {
            std::size_t batch = 1;
            std::tie(batch, d.x_source) = sequence_shape("X_source");
            if (batch != d.batch)
                reader_.fail("$.X_source", fmt::format("X is a batch of {} so X_source needs {} sequences, found {}", d.batch, d.batch, batch));
        }
        d.w_q = weight_shape("W_Q");
        d.w_k = weight_shape("W_K");
        d.w_v = weight_shape("W_V");
        d.w_o = weight_shape(has("out_proj.weight") ? "out_proj.weight" : "W_O");
        d.b_q = bias_length("b_Q");
        d.b_k = bias_length("b_K");
        d.b_v = bias_length("b_V");
        d.b_o = bias_length(has("out_proj.bias") ? "out_proj.bias" : "b_O");
        if (has("in_proj_weight")) {
            // (3·d_out, d_in) in torch layout: each third is one weight.
            const auto s = shape_of_rank("in_proj_weight", 2);
            if (s[0] % 3 != 0)
                reader_.fail("$.in_proj_weight", fmt::format("expected (3·d, d) rows for W_Q, W_K, W_V stacked, found ({}, {})", s[0], s[1]));
            d.w_q = d.w_k = d.w_v = Extent{s[1], s[0] / 3};
        }
        if (has("in_proj_bias")) {
            const std::size_t length = shape_of_rank("in_proj_bias", 1)[0];
            if (length % 3 != 0) reader_.fail("$.in_proj_bias", fmt::format("expected 3·d values (b_Q, b_K, b_V), found {}", length));
            d.b_q = d.b_k = d.b_v = length / 3;
        }
        if (has("Q")) {
            d.q = direct_shape("Q", problem_.heads, "heads");
            if (!has("kv_heads")) problem_.kv_heads = problem_.heads;
            d.k = direct_shape("K", problem_.kv_heads, "kv_heads");
            d.v = direct_shape("V", problem_.kv_heads, "kv_heads");
            if (problem_.heads % problem_.kv_heads != 0)
                reader_.fail("$.K", fmt::format("{} KV heads do not divide {} query heads", problem_.kv_heads, problem_.heads));
        }
        return d;
    }

    void read_projections() {
        if (has("X")) {
            auto x = reader_.array(at("X"), "$.X");
            problem_.batched = x.shape.size() == 3;
            problem_.X = batch_of_matrices(std::move(x));
        }
        if (has("X_source"))
            problem_.X_source = batch_of_matrices(reader_.array(at("X_source"), "$.X_source"));
        auto read_weight = [&](const char* key, std::optional<Matrix>& into) {
            if (has(key)) into = weight(at(key), path_of(key));
        };
        auto read_bias = [&](const char* key, std::optional<std::vector<double>>& into) {
            if (has(key)) into = reader_.vector(at(key), path_of(key));
        };
        read_weight("W_Q", problem_.W_Q);
        read_weight("W_K", problem_.W_K);
        read_weight("W_V", problem_.W_V);
        read_weight("W_O", problem_.W_O);
        read_bias("b_Q", problem_.b_Q);
        read_bias("b_K", problem_.b_K);
        read_bias("b_V", problem_.b_V);
        read_bias("b_O", problem_.b_O);
        read_in_proj();
    }

    // nn.MultiheadAttention's stacked (3d, d) in_proj_weight is W_Q, W_K, W_V in
    // torch layout one above the other; in_proj_bias likewise.
    void read_in_proj() {
        if (has("in_proj_weight")) {
            const Matrix stacked = reader_.matrix(at("in_proj_weight"), "$.in_proj_weight");
            const std::size_t d = stacked.rows() / 3;
            std::optional<Matrix>* parts[] = {&problem_.W_Q, &problem_.W_K, &problem_.W_V};
            for (std::size_t p = 0; p < 3; ++p) {
                Matrix part(d, stacked.cols());
                std::copy_n(stacked.row(p * d), d * stacked.cols(), part.data().begin());
                *parts[p] = part.transposed();
            }
        }
        if (has("in_proj_bias")) {
            const auto stacked = reader_.vector(at("in_proj_bias"), "$.in_proj_bias");
            const std::size_t d = stacked.size() / 3;
            std::optional<std::vector<double>>* parts[] = {&problem_.b_Q, &problem_.b_K, &problem_.b_V};
            for (std::size_t p = 0; p < 3; ++p)
                *parts[p] = std::vector<double>(stacked.begin() + static_cast<long>(p * d), stacked.begin() + static_cast<long>((p + 1) * d));
        }
        if (has("out_proj.weight")) problem_.W_O = weight(at("out_proj.weight"), "$.out_proj.weight");
        if (has("out_proj.bias")) problem_.b_O = reader_.vector(at("out_proj.bias"), "$.out_proj.bias");
    }

    // Q, K, V given directly (their shapes were checked by declared_shapes).
    void read_direct_qkv() {
        if (!has("Q")) return;
        problem_.Q = direct_matrix("Q");
        problem_.K = direct_matrix("K");
        problem_.V = direct_matrix("V");
    }

    Matrix direct_matrix(const char* key) {
        auto array = reader_.array(at(key), path_of(key));
        if (array.shape.size() == 2) return Matrix(array.shape[0], array.shape[1], std::move(array.data));
        return heads_side_by_side(array);
    }

    void need(bool condition, const std::string& path, const std::string& what) const {
        if (!condition) reader_.fail(path, what);
    }

    void derive_sizes(const DeclaredShapes& d) {
        auto& p = problem_;
        if (has("mla")) {
            derive_mla_sizes(d);
        } else if (has("X")) {
            for (const char* key : {"W_Q", "W_K", "W_V"})
                need(has(key) || has("in_proj_weight"), path_of(key), fmt::format("X is given, so {} is needed", key));
            const Extent& x = d.x;
            const Extent& source = d.x_source;
            const char* source_name = has("X_source") ? "X_source" : "X";
            p.batch = d.batch;
            p.n = x.rows;
            p.m = source.rows;
            p.d_model = x.cols;
            p.d_src = source.cols;
            // In torch layout the file's W is (out, in): its input side is the columns.
            const char* input_side = torch_layout_ ? "columns" : "rows";
            auto rows_needed = [&](const Extent& w, const char* key, const char* input_name, const Extent& input) {
                // A weight that fits the other way round was most likely written in the other layout.
                const std::string hint =
                    w.cols != input.cols ? ""
                    : torch_layout_ ? "; it fits in math orientation (d_in, d_out): leave out \"weights_layout\": \"torch\""
                                    : "; it fits stored (out_features, in_features) as torch.nn.Linear keeps it: add \"weights_layout\": \"torch\"";
                need(w.rows == input.cols, weight_path(key),
                     fmt::format("{} is {} so {} needs {} {}, found {}{}", input_name, shape_string(input.rows, input.cols), key, input.cols, input_side,
                                 w.rows, hint));
            };
            rows_needed(*d.w_q, "W_Q", "X", x);
            rows_needed(*d.w_k, "W_K", source_name, source);
            rows_needed(*d.w_v, "W_V", source_name, source);
            split_widths(d.w_q->cols, d.w_k->cols, d.w_v->cols, weight_path("W_Q"), weight_path("W_K"), weight_path("W_V"));
            check_bias(d.b_q, "b_Q", d.w_q->cols, "W_Q");
            check_bias(d.b_k, "b_K", d.w_k->cols, "W_K");
            check_bias(d.b_v, "b_V", d.w_v->cols, "W_V");
        } else if (d.q) {
            p.n = d.q->rows;
            p.m = d.k->rows;
            need(d.v->rows == p.m, "$.V",
                 fmt::format("K has {} row{} (keys) so V needs {} row{}, found {}", p.m, p.m == 1 ? "" : "s", p.m, p.m == 1 ? "" : "s", d.v->rows));
            split_widths(d.q->cols, d.k->cols, d.v->cols, "$.Q", "$.K", "$.V");
        } else {
            reader_.fail("$", "nothing to compute: give X with W_Q, W_K, W_V, or Q, K, V");
        }
        for (const char* key : {"b_Q", "b_K", "b_V"})
            if (has(key) && !has("X")) reader_.fail(path_of(key), "biases apply to projections of X");
        if (d.w_o) {
            const std::size_t concat_width = static_cast<std::size_t>(p.heads) * p.d_v;
            need(d.w_o->rows == concat_width, weight_path("W_O"),
                 fmt::format("the heads concatenate to {} columns ({} heads × d_v {}) so W_O needs {} {}, found {}", concat_width,
                             p.heads, p.d_v, concat_width, torch_layout_ ? "columns" : "rows", d.w_o->rows));
            check_bias(d.b_o, "b_O", d.w_o->cols, "W_O");
        } else if (d.b_o) {
            reader_.fail(bias_path("b_O"), "b_O needs W_O");
        }
    }

    // MLA (docs/FAMILY.md#mla-multi-head-latent-attention-deepseek-v2): keys and values
    // from the latent, queries from W_Q or W_DQ W_UQ.
    void derive_mla_sizes(const DeclaredShapes& d) {
        auto& p = problem_;
        need(has("X"), "$.mla", "MLA projects token vectors: it needs X (and X_source for cross-attention), not Q, K, V");
        for (const char* key : {"W_K", "W_V", "b_K", "b_V", "in_proj_weight", "in_proj_bias"})
            need(!has(key), path_of(key), fmt::format("with mla the keys and values come from the latent c_kv (mla.W_DKV, W_UK, W_UV): leave out {}", key));
        need(p.kv_heads == p.heads, "$.kv_heads", "MLA gives every head its own keys and values (from one shared latent): leave out kv_heads");
        p.batch = d.batch;
        p.n = d.x.rows;
        p.m = d.x_source.rows;
        p.d_model = d.x.cols;
        p.d_src = d.x_source.cols;
        if (d.w_q)
            need(d.w_q->rows == p.d_model, weight_path("W_Q"),
                 fmt::format("X is {} so W_Q needs {} {}, found {}", shape_string(d.x.rows, d.x.cols), p.d_model, torch_layout_ ? "columns" : "rows",
                             d.w_q->rows));
        p.mla = read_mla(at("mla"), "$.mla", reader_, p.d_model, p.d_src, p.heads, d.w_q ? d.w_q->cols : 0);
        need(!(d.w_q && p.mla->W_DQ), "$.W_Q", "give the queries either as W_Q or as mla.W_DQ with mla.W_UQ, not both");
        if (d.w_q) check_bias(d.b_q, "b_Q", d.w_q->cols, "W_Q");
        else need(!d.b_q, "$.b_Q", "b_Q is W_Q's bias: with mla.W_DQ and W_UQ there is no W_Q");
        p.d_k = p.mla->d_content + p.mla->d_r;
        p.d_v = p.mla->W_UV.cols() / static_cast<std::size_t>(p.heads);
    }

    std::string weight_path(const char* key) const {
        if (!has(key) && has("in_proj_weight") && std::string(key) != "W_O") return "$.in_proj_weight";
        if (!has(key) && std::string(key) == "W_O" && has("out_proj.weight")) return "$.out_proj.weight";
        return path_of(key) + tensor_named(key);
    }
    // " (tensor 'NAME' of FILE)" for a matrix read from a safetensors file (a checkpoint's):
    // a shape error then names where the numbers came from.
    std::string tensor_named(const char* key) const {
        if (!has(key) || !at(key).is_object()) return "";
        const json& v = at(key);
        if (!v.contains("tensor") || !v["tensor"].is_string() || !v.contains("safetensors") || !v["safetensors"].is_string()) return "";
        return fmt::format(" (tensor '{}' of {})", v["tensor"].get<std::string>(), v["safetensors"].get<std::string>());
    }
    std::string bias_path(const char* key) const {
        if (!has(key) && has("in_proj_bias") && std::string(key) != "b_O") return "$.in_proj_bias";
        if (!has(key) && std::string(key) == "b_O" && has("out_proj.bias")) return "$.out_proj.bias";
        return path_of(key) + tensor_named(key);
    }

    void check_bias(const std::optional<std::size_t>& length, const char* key, std::size_t width, const char* weight_name) {
        if (!length) return;
        need(*length == width, bias_path(key),
             fmt::format("{} has {} output columns so {} needs {} values, found {}", weight_name, width, key, width, *length));
    }

    // Query width = heads·d_k, key width = kv_heads·d_k, value width = kv_heads·d_v.
    void split_widths(std::size_t q_width, std::size_t k_width, std::size_t v_width, const std::string& q_path,
                      const std::string& k_path, const std::string& v_path) {
        auto& p = problem_;
        const auto heads = static_cast<std::size_t>(p.heads), kv_heads = static_cast<std::size_t>(p.kv_heads);
        need(q_width % heads == 0, q_path, fmt::format("{} query columns do not split into {} heads", q_width, heads));
        p.d_k = q_width / heads;
        need(k_width == kv_heads * p.d_k, k_path,
             kv_heads == 1 && heads == 1
                 ? fmt::format("queries have d_k = {} so keys need {} columns, found {}", p.d_k, p.d_k, k_width)
                 : fmt::format("d_k = {} ({} query columns / {} heads) so keys need kv_heads {} × {} = {} columns, found {}",
                               p.d_k, q_width, heads, kv_heads, p.d_k, kv_heads * p.d_k, k_width));
        need(v_width % kv_heads == 0, v_path, fmt::format("{} value columns do not split into {} kv_heads", v_width, kv_heads));
        p.d_v = v_width / kv_heads;
    }

    void read_labels() {
        auto& p = problem_;
        if (has("tokens")) {
            p.tokens = reader_.strings(at("tokens"), "$.tokens");
            need(p.tokens.size() == p.n, "$.tokens", fmt::format("there are {} queries so tokens needs {} labels, found {}", p.n, p.n, p.tokens.size()));
        }
        if (has("source_tokens")) {
            p.source_tokens = reader_.strings(at("source_tokens"), "$.source_tokens");
            need(p.source_tokens.size() == p.m, "$.source_tokens",
                 fmt::format("there are {} keys so source_tokens needs {} labels, found {}", p.m, p.m, p.source_tokens.size()));
        }
    }

    void read_options() {
        auto& p = problem_;
        if (has("scale")) {
            const auto& s = at("scale");
            if (s.is_string()) p.scale = parse_scale(s.get<std::string>(), reader_.file() + ": $.scale");
            else {
                const double value = reader_.number(s, "$.scale");
                need(std::isfinite(value), "$.scale", fmt::format("expected a finite number, \"auto\" or \"none\", found {}", s.dump()));
                p.scale = {Scale::Kind::value, value};
            }
        }
        if (has("empty_rows")) p.empty_rows = parse_empty_rows(reader_.string(at("empty_rows"), "$.empty_rows"), reader_.file() + ": $.empty_rows");
        if (has("lengths")) {
            const auto& value = at("lengths");
            need(value.is_array(), "$.lengths", "expected one length per sequence, found " + describe_json(value));
            need(value.size() == p.batch, "$.lengths", fmt::format("the batch has {} sequence{} so lengths needs {} values, found {}", p.batch, p.batch == 1 ? "" : "s", p.batch, value.size()));
            for (std::size_t b = 0; b < value.size(); ++b)
                p.lengths.push_back(static_cast<std::size_t>(reader_.whole_number(value[b], fmt::format("$.lengths[{}]", b), 0, static_cast<long>(p.m))));
        }
        if (has("softcap")) {
            const double cap = reader_.number(at("softcap"), "$.softcap");
            need(std::isfinite(cap) && cap > 0, "$.softcap", fmt::format("expected a number > 0, found {}", at("softcap").dump()));
            p.softcap = cap;
        }
        if (has("dropout")) read_dropout(at("dropout"));
        if (has("alibi")) {
            const auto& value = at("alibi");
            if (value.is_boolean()) {
                if (value.get<bool>()) {
                    // The standard slopes of Press et al.: 2^(-8(h+1)/H).
                    std::vector<double> slopes;
                    for (int h = 0; h < p.heads; ++h) slopes.push_back(std::exp2(-8.0 * (h + 1) / p.heads));
                    p.alibi_slopes = slopes;
                }
            } else {
                auto slopes = reader_.vector(value, "$.alibi");
                need(slopes.size() == static_cast<std::size_t>(p.heads), "$.alibi",
                     fmt::format("expected true, false or one slope per head ({}), found {} slopes", p.heads, slopes.size()));
                p.alibi_slopes = slopes;
            }
        }
    }

    // {"p": 0.1, "seed": 3, "mode": "train"}
    void read_dropout(const json& value) {
        need(value.is_object(), "$.dropout", "expected {\"p\": 0.1, \"seed\": 3, \"mode\": \"train\"}, found " + describe_json(value));
        for (const auto& [key, item] : value.items())
            if (key != "p" && key != "seed" && key != "mode") reader_.fail("$.dropout." + key, "unknown key: dropout has \"p\", \"seed\" and \"mode\"");
        need(value.contains("p"), "$.dropout", "needs \"p\": the probability of dropping a weight");
        Dropout dropout;
        dropout.p = reader_.number(value["p"], "$.dropout.p");
        need(dropout.p >= 0 && dropout.p < 1, "$.dropout.p",
             fmt::format("expected 0 ≤ p < 1 (p = 1 would drop every weight and divide by 0), found {}", value["p"].dump()));
        if (value.contains("seed")) dropout.seed = static_cast<std::uint64_t>(reader_.whole_number(value["seed"], "$.dropout.seed", 0, 1L << 53));
        if (value.contains("mode")) {
            const auto mode = reader_.string(value["mode"], "$.dropout.mode");
            need(mode == "train" || mode == "eval", "$.dropout.mode", "expected \"train\" or \"eval\", found \"" + mode + "\"");
            dropout.train = mode == "train";
        }
        problem_.dropout = dropout;
    }

    void read_masks() {
        // A top-level sparse pattern is one more mask: it combines with `mask` by adding.
        if (has("sparse")) problem_.masks.push_back(read_sparse_spec(at("sparse"), "$.sparse", reader_, problem_.n, problem_.m));
        if (!has("mask")) return;
        const auto& value = at("mask");
        if (value.is_array() && !value.empty() && (value[0].is_string() || value[0].is_object())) {
            for (std::size_t i = 0; i < value.size(); ++i) problem_.masks.push_back(read_mask_spec(value[i], fmt::format("$.mask[{}]", i), reader_, problem_.n, problem_.m));
        } else {
            problem_.masks.push_back(read_mask_spec(value, "$.mask", reader_, problem_.n, problem_.m));
        }
    }

    void read_position_features() {
        auto& p = problem_;
        if (has("rope")) {
            const auto& value = at("rope");
            need(value.is_object(), "$.rope", "expected {\"base\": 10000} or {\"angles_deg\": [...]}, found " + describe_json(value));
            Rope rope;
            for (const auto& [key, item] : value.items())
                if (key != "base" && key != "angles_deg" && key != "style")
                    reader_.fail("$.rope." + key, "unknown key: rope has \"base\", \"angles_deg\" and \"style\"");
            // With MLA, RoPE turns the decoupled part (rope_dims wide) only.
            if (p.mla) need(p.mla->d_r > 0, "$.rope", "with mla, RoPE turns the decoupled part only: give mla.rope_dims, W_QR and W_KR");
            const std::size_t d = p.mla ? p.mla->d_r : p.d_k;
            const char* d_name = p.mla ? "rope_dims" : "d_k";
            need(d % 2 == 0, "$.rope", fmt::format("RoPE rotates pairs, so d_k must be even, found {}", d));
            if (value.contains("base")) {
                rope.base = reader_.number(value["base"], "$.rope.base");
                need(rope.base > 0 && std::isfinite(rope.base), "$.rope.base", "expected a number > 0");
            }
            if (value.contains("angles_deg")) {
                need(!value.contains("base"), "$.rope", "give either base or angles_deg, not both");
                rope.angles_deg = reader_.vector(value["angles_deg"], "$.rope.angles_deg");
                need(rope.angles_deg.size() == d / 2, "$.rope.angles_deg",
                     fmt::format("{} = {} has {} pairs so angles_deg needs {} angles, found {}", d_name, d, d / 2, d / 2, rope.angles_deg.size()));
            }
            if (value.contains("style")) {
                const auto style = reader_.string(value["style"], "$.rope.style");
                need(style == "interleaved" || style == "half", "$.rope.style", "expected \"interleaved\" or \"half\", found \"" + style + "\"");
                rope.style = style == "half" ? Rope::Style::half : Rope::Style::interleaved;
            }
            if (p.mla) p.mla->rope = rope;
            else p.rope = rope;
        }
        const bool turns = p.rope.has_value() || (p.mla && p.mla->d_r > 0);
        auto read_positions = [&](const char* key, std::vector<double>& into, std::size_t count, const char* what) {
            if (!has(key)) return;
            need(turns, path_of(key), "positions are used by RoPE only: add \"rope\"");
            into = reader_.vector(at(key), path_of(key));
            need(into.size() == count, path_of(key), fmt::format("there are {} {} so {} needs {} values, found {}", count, what, key, count, into.size()));
        };
        read_positions("positions", p.positions, p.n, "queries");
        read_positions("source_positions", p.source_positions, p.m, "keys");
    }

    // grad's d_out: (n, width) or, for a batch, (B, n, width); width = W_O's columns, else H·d_v.
    void read_d_out() {
        if (!has("d_out")) return;
        auto& p = problem_;
        const std::size_t width = p.W_O ? p.W_O->cols() : static_cast<std::size_t>(p.heads) * p.d_v;
        const auto shape = reader_.declared_shape(at("d_out"), "$.d_out");
        const std::vector<std::size_t> want = p.batched ? std::vector<std::size_t>{p.batch, p.n, width} : std::vector<std::size_t>{p.n, width};
        if (shape != want) {
            std::vector<std::string> parts;
            for (auto x : shape) parts.push_back(std::to_string(x));
            reader_.fail("$.d_out", fmt::format("dL/d(output) has the output's shape: {} (queries × {}), found ({})",
                                                p.batched ? fmt::format("({}, {}, {})", p.batch, p.n, width) : shape_string(p.n, width),
                                                p.W_O ? "W_O's columns" : "heads · d_v", fmt::join(parts, ", ")));
        }
        p.d_out = batch_of_matrices(reader_.array(at("d_out"), "$.d_out"));
    }

    void read_expectations() {
        if (!has("expect")) return;
        const auto& list = at("expect");
        need(list.is_array(), "$.expect", "expected a list of {\"name\": STEP, \"data\": [[...]]}, found " + describe_json(list));
        for (std::size_t e = 0; e < list.size(); ++e) {
            const std::string path = fmt::format("$.expect[{}]", e);
            const auto& item = list[e];
            need(item.is_object(), path, "expected an object {\"name\": STEP, \"data\": [[...]]}, found " + describe_json(item));
            Expectation x;
            x.json_path = path;
            for (const auto& [key, value] : item.items()) {
                static const std::vector<std::string> keys = {"name", "head", "batch", "t", "tile", "row", "data", "atol", "rtol"};
                if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
                    const auto near = nearest_word(key, keys);
                    reader_.fail(path + "." + key, "unknown key \"" + key + "\"" + (near.empty() ? "" : " (did you mean \"" + near + "\"?)"));
                }
            }
            need(item.contains("name"), path, "needs \"name\" (a step such as \"weights\")");
            x.name = reader_.string(item["name"], path + ".name");
            if (std::find(step_names().begin(), step_names().end(), x.name) == step_names().end()) {
                const auto near = nearest_word(x.name, step_names());
                reader_.fail(path + ".name", "unknown step \"" + x.name + "\"" + (near.empty() ? "" : " (did you mean \"" + near + "\"?)"));
            }
            if (item.contains("head")) x.head = static_cast<int>(reader_.whole_number(item["head"], path + ".head", 0, problem_.heads - 1));
            if (item.contains("batch")) x.batch = static_cast<int>(reader_.whole_number(item["batch"], path + ".batch", 0, static_cast<long>(problem_.batch) - 1));
            if (item.contains("t")) x.t = static_cast<int>(reader_.whole_number(item["t"], path + ".t", 0, static_cast<long>(problem_.n) - 1));
            if (item.contains("tile")) {
                const auto& tile = item["tile"];
                need(tile.is_array() && tile.size() == 2, path + ".tile", "expected [query block, key tile], found " + describe_json(tile));
                x.tile = std::array<int, 2>{static_cast<int>(reader_.whole_number(tile[0], path + ".tile[0]", 0, 1L << 30)),
                                            static_cast<int>(reader_.whole_number(tile[1], path + ".tile[1]", 0, 1L << 30))};
            }
            if (item.contains("row")) {
                need(x.name == "jacobian", path + ".row", "only a jacobian entry has a row (the query row of grad's ⟦row⟧)");
                x.row = static_cast<std::size_t>(reader_.whole_number(item["row"], path + ".row", 0, static_cast<long>(problem_.n) - 1));
            }
            need(x.name != "jacobian" || x.row, path, "a jacobian entry needs \"row\": the query row whose softmax Jacobian it is");
            need(item.contains("data"), path, "needs \"data\": the expected values");
            const auto array = reader_.array(item["data"], path + ".data");
            need(array.shape.size() <= 2, path + ".data", "expected a matrix (or a vector for a single row)");
            x.data = Matrix(array.shape.size() == 2 ? array.shape[0] : 1, array.shape.back());
            x.data.data() = array.data;
            if (item.contains("atol")) x.atol = reader_.number(item["atol"], path + ".atol");
            if (item.contains("rtol")) x.rtol = reader_.number(item["rtol"], path + ".rtol");
            need(x.atol >= 0 && x.rtol >= 0, path, "atol and rtol must be >= 0");
            problem_.expect.push_back(std::move(x));
        }
    }

    const json& root_;
    JsonReader reader_;
    Problem problem_;
    bool torch_layout_ = false;
};

}  // namespace

double Problem::scale_factor() const {
    switch (scale.kind) {
        case Scale::Kind::automatic: return 1.0 / std::sqrt(static_cast<double>(d_k));
        case Scale::Kind::none: return 1.0;
        case Scale::Kind::value: return scale.value;
    }
    return 1.0;
}

Problem parse_problem(const std::string& text, const std::string& file_label, bool allow_nonfinite) {
    json root = parse_json_text(text, file_label);
    ArraySource arrays(file_label);  // .npy and safetensors files, relative to the problem file
    expand_checkpoint(root, arrays, JsonReader(file_label));
    return ProblemLoader(root, file_label, allow_nonfinite, arrays).load();
}

Problem load_problem(const std::string& path, bool allow_nonfinite) {
    if (path == "-") {
        const std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
        return parse_problem(text, "<stdin>", allow_nonfinite);
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(fmt::format("{}: cannot open the problem file (does it exist and is it readable?)", path));
    std::ostringstream text;
    text << in.rdbuf();
    return parse_problem(text.str(), path, allow_nonfinite);
}

void validate_masks(const Problem& problem) {
    for (std::size_t i = 0; i < problem.masks.size(); ++i) {
        const auto& spec = problem.masks[i];
        const std::string path = !spec.path.empty() ? spec.path : problem.masks.size() == 1 ? "$.mask" : fmt::format("$.mask[{}]", i);
        if (spec.needs_shape() && (spec.matrix.rows() != problem.n || spec.matrix.cols() != problem.m))
            throw JsonPathError(problem.file, path, mask_shape_error(problem.n, problem.m, spec.label, spec.matrix.rows(), spec.matrix.cols()));
        if (spec.kind == MaskSpec::Kind::key_valid && spec.key_valid.size() != problem.m)
            throw JsonPathError(problem.file, path,
                                fmt::format("there are {} keys so the padding mask needs {} values, found {}", problem.m, problem.m, spec.key_valid.size()));
    }
}

std::string dtype_name(Dtype dtype) { return dtype == Dtype::f32 ? "f32" : "f64"; }

std::string empty_rows_name(EmptyRows policy) {
    switch (policy) {
        case EmptyRows::error: return "error";
        case EmptyRows::zero: return "zero";
        case EmptyRows::nan: return "nan";
    }
    return "error";
}

std::vector<MaskSpec> parse_mask_option(const std::string& text, std::size_t n, std::size_t m, const std::string& where) {
    std::vector<MaskSpec> masks;
    const auto first = text.find_first_not_of(" \t\n");
    if (first == std::string::npos || (text[first] != '{' && text[first] != '[')) {
        if (text != "none") masks.push_back(parse_mask_string(text, where));
        return masks;
    }
    const json value = parse_json_text(text, where);
    const JsonReader reader(where);
    if (value.is_array())
        for (std::size_t i = 0; i < value.size(); ++i) masks.push_back(read_mask_spec(value[i], fmt::format("$[{}]", i), reader, n, m));
    else
        masks.push_back(read_mask_spec(value, "$", reader, n, m));
    return masks;
}

Dtype parse_dtype(const std::string& text, const std::string& where) {
    if (text == "f64") return Dtype::f64;
    if (text == "f32") return Dtype::f32;
    throw InputError(fmt::format("{}: expected \"f64\" or \"f32\", found \"{}\"", where, text));
}

EmptyRows parse_empty_rows(const std::string& text, const std::string& where) {
    if (text == "error") return EmptyRows::error;
    if (text == "zero") return EmptyRows::zero;
    if (text == "nan") return EmptyRows::nan;
    throw InputError(fmt::format("{}: expected \"error\", \"zero\" or \"nan\", found \"{}\"", where, text));
}

Scale parse_scale(const std::string& text, const std::string& where) {
    if (text == "auto") return {};
    if (text == "none") return {Scale::Kind::none, 1.0};
    try {
        std::size_t used = 0;
        const double value = std::stod(text, &used);
        if (used == text.size() && std::isfinite(value)) return {Scale::Kind::value, value};
    } catch (const std::exception&) {
    }
    throw InputError(fmt::format("{}: expected \"auto\", \"none\" or a finite number, found \"{}\"", where, text));
}

}  // namespace attn_trace
