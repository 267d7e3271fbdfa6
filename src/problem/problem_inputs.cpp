// The inputs' numbers, read once their shapes are known to fit: X and X_source, the
// projections (nn.MultiheadAttention's stacked ones split), Q, K, V given directly, grad's
// d_out, and the token labels.
#include "problem_loader.hpp"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attn_trace/matrix.hpp"
#include "attn_trace/text_width.hpp"

namespace attn_trace {

using nlohmann::json;

namespace {

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

}  // namespace

// A weight in the file's layout, returned in math orientation (d_in, d_out).
Matrix ProblemLoader::weight(const json& value, const std::string& path) const {
    Matrix w = reader_.matrix(value, path);
    return torch_layout_ ? w.transposed() : w;
}

void ProblemLoader::read_projections() {
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
void ProblemLoader::read_in_proj() {
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
void ProblemLoader::read_direct_qkv() {
    if (!has("Q")) return;
    problem_.Q = direct_matrix("Q");
    problem_.K = direct_matrix("K");
    problem_.V = direct_matrix("V");
}

Matrix ProblemLoader::direct_matrix(const char* key) {
    auto array = reader_.array(at(key), path_of(key));
    if (array.shape.size() == 2) return Matrix(array.shape[0], array.shape[1], std::move(array.data));
    return heads_side_by_side(array);
}

// The labels of `key`. A label or title is shown as written, but for the characters that would break a printed
// table (a tokenizer's newline token, say), shown as their escapes
// (docs/PROBLEM.md#labels-title-tokens-source_tokens).
std::vector<std::string> ProblemLoader::labels(const char* key) const {
    auto texts = reader_.strings(at(key), path_of(key));
    for (std::string& text : texts) text = visible_text(text);
    return texts;
}

void ProblemLoader::read_labels() {
    auto& p = problem_;
    if (has("tokens")) {
        p.tokens = labels("tokens");
        need(p.tokens.size() == p.n, "$.tokens", fmt::format("there are {} queries so tokens needs {} labels, found {}", p.n, p.n, p.tokens.size()));
    }
    if (has("source_tokens")) {
        p.source_tokens = labels("source_tokens");
        need(p.source_tokens.size() == p.m, "$.source_tokens",
             fmt::format("there are {} keys so source_tokens needs {} labels, found {}", p.m, p.m, p.source_tokens.size()));
    }
}

// grad's d_out: (n, width) or, for a batch, (B, n, width); width = W_O's columns, else H·d_v.
void ProblemLoader::read_d_out() {
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

}  // namespace attn_trace
