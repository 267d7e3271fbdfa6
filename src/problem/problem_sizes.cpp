// The declared shapes checked against one another (X against its weights, Q against K and
// V, W_O against the heads, MLA's against the latent) and the problem's sizes derived from
// them: batch, n, m, d_model, d_src, d_k, d_v.
#include "problem_loader.hpp"

#include <fmt/format.h>

#include "attn_trace/matrix.hpp"
#include "mla_reader.hpp"

namespace attn_trace {

using nlohmann::json;

void ProblemLoader::derive_sizes(const DeclaredShapes& d) {
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
void ProblemLoader::derive_mla_sizes(const DeclaredShapes& d) {
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

std::string ProblemLoader::weight_path(const char* key) const {
    if (!has(key) && has("in_proj_weight") && std::string(key) != "W_O") return "$.in_proj_weight";
    if (!has(key) && std::string(key) == "W_O" && has("out_proj.weight")) return "$.out_proj.weight";
    return path_of(key) + tensor_named(key);
}

// " (tensor 'NAME' of FILE)" for a matrix read from a safetensors file (a checkpoint's):
// a shape error then names where the numbers came from.
std::string ProblemLoader::tensor_named(const char* key) const {
    if (!has(key) || !at(key).is_object()) return "";
    const json& v = at(key);
    if (!v.contains("tensor") || !v["tensor"].is_string() || !v.contains("safetensors") || !v["safetensors"].is_string()) return "";
    return fmt::format(" (tensor '{}' of {})", v["tensor"].get<std::string>(), v["safetensors"].get<std::string>());
}

std::string ProblemLoader::bias_path(const char* key) const {
    if (!has(key) && has("in_proj_bias") && std::string(key) != "b_O") return "$.in_proj_bias";
    if (!has(key) && std::string(key) == "b_O" && has("out_proj.bias")) return "$.out_proj.bias";
    return path_of(key) + tensor_named(key);
}

void ProblemLoader::check_bias(const std::optional<std::size_t>& length, const char* key, std::size_t width, const char* weight_name) {
    if (!length) return;
    need(*length == width, bias_path(key),
         fmt::format("{} has {} output columns so {} needs {} values, found {}", weight_name, width, key, width, *length));
}

// Query width = heads·d_k, key width = kv_heads·d_k, value width = kv_heads·d_v.
void ProblemLoader::split_widths(std::size_t q_width, std::size_t k_width, std::size_t v_width, const std::string& q_path,
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

}  // namespace attn_trace
