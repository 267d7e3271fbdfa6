// The shapes the inputs declare, read before any of their numbers: heads and kv_heads, the
// weights' layout (math or torch), which input keys go together, and each matrix's extents.
#include "problem_loader.hpp"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

namespace attn_trace {

void ProblemLoader::read_heads() {
    if (has("heads")) problem_.heads = static_cast<int>(reader_.whole_number(at("heads"), "$.heads", 1, 4096));
    problem_.kv_heads = has("kv_heads") ? static_cast<int>(reader_.whole_number(at("kv_heads"), "$.kv_heads", 1, 4096))
                                        : problem_.heads;
    if (problem_.heads % problem_.kv_heads != 0)
        reader_.fail("$.kv_heads", fmt::format("kv_heads must divide heads ({}), found {}", problem_.heads, problem_.kv_heads));
}

void ProblemLoader::read_layout() {
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
void ProblemLoader::check_input_keys() {
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
    for (const char* key : {"W_Q", "W_K", "W_V", "b_Q", "b_K", "b_V", "in_proj_weight", "in_proj_bias"})
        if (has(key)) reader_.fail(path_of(key), "projections apply to X; with Q, K, V given directly leave them out");
}

// X or X_source: (n, d), or a batch (B, n, d).
std::pair<std::size_t, ProblemLoader::Extent> ProblemLoader::sequence_shape(const char* key) const {
    const auto s = reader_.declared_shape(at(key), path_of(key));
    if (s.size() == 2) return {1, {s[0], s[1]}};
    if (s.size() == 3) return {s[0], {s[1], s[2]}};
    reader_.fail(path_of(key), fmt::format("expected {} as (n, d) or a batch (B, n, d), found a 1-dimensional array", key));
}

std::vector<std::size_t> ProblemLoader::shape_of_rank(const char* key, std::size_t rank) const {
    return reader_.declared_shape(at(key), path_of(key), rank);
}

// A weight in the file's layout, as (d_in, d_out).
std::optional<ProblemLoader::Extent> ProblemLoader::weight_shape(const char* key) const {
    if (!has(key)) return std::nullopt;
    const auto s = shape_of_rank(key, 2);
    return torch_layout_ ? Extent{s[1], s[0]} : Extent{s[0], s[1]};
}

std::optional<std::size_t> ProblemLoader::bias_length(const char* key) const {
    if (!has(key)) return std::nullopt;
    return shape_of_rank(key, 1)[0];
}

// Q, K or V: (rows, width), or per head (heads, rows, width) -> (rows, heads · width).
// A per-head array without "heads" (or "kv_heads") sets it: its first extent is unambiguous.
ProblemLoader::Extent ProblemLoader::direct_shape(const char* key, int& heads, const char* heads_key) {
    const auto s = reader_.declared_shape(at(key), path_of(key));
    if (s.size() == 2) return {s[0], s[1]};
    if (s.size() != 3)
        reader_.fail(path_of(key), fmt::format("expected {} as (rows, width) or per head (heads, rows, width), found 1 dimension", key));
    if (!has(heads_key)) heads = static_cast<int>(std::min<std::size_t>(s[0], 1 << 30));
    if (s[0] != static_cast<std::size_t>(heads))
        reader_.fail(path_of(key), fmt::format("a per-head {} is ({}, rows, width) with {} = {}, found {} heads", key, heads, heads_key, heads, s[0]));
    return {s[1], s[0] * s[2]};
}

ProblemLoader::DeclaredShapes ProblemLoader::declared_shapes() {
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

}  // namespace attn_trace
