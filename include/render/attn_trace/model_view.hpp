#pragma once
// A whole model at a glance (docs/COMMANDS.md#view): every layer and head of one sequence,
// each head's weights, and per query the key it weighs most.
#include <cstddef>
#include <string>
#include <vector>

#include "attn_trace/matrix.hpp"

namespace attn_trace {

struct ModelViewHead {
    int head = 0;
    Matrix weights;  // (n, m): softmax rows
    // Per query row: the key it weighs most (the first of equal weights) and that weight.
    std::vector<std::size_t> top_key;
    std::vector<double> top_weight;
};

struct ModelViewLayer {
    std::string file;  // the problem file it was traced from
    long layer = 0;    // the model's layer index (its model directory's), else the file's position
    std::vector<ModelViewHead> heads;
};

struct ModelView {
    std::vector<std::string> queries, keys;  // token labels (empty: numbered)
    std::size_t n = 0, m = 0;
    std::vector<ModelViewLayer> layers;
};

// Fills top_key and top_weight from the weights.
ModelViewHead view_head(int head, Matrix weights);

// Per layer a table of queries × heads, each cell the key the query weighs most and its weight.
std::string model_view_text(const ModelView& view, int precision);
std::string model_view_json(const ModelView& view);

}  // namespace attn_trace
