#pragma once
// A whole model at a glance (docs/COMMANDS.md#view): every layer and head of one sequence,
// each head's weights, and per query the key it weighs most.
#include <cstddef>
#include <string>
#include <vector>

#include "attn_trace/matrix.hpp"
#include "attn_trace/trace.hpp"

namespace attn_trace {

struct ModelViewHead {
    int head = 0;
    Matrix weights;  // (n, m): softmax rows
    // Per query row: the key it weighs most (the first of equal weights) and that weight.
    std::vector<std::size_t> top_key;
    std::vector<double> top_weight;
    // The head's steps from scores to out (scaled, mask, row_max, exp, … as the layer's
    // trace has them): what the page shows when the head is clicked.
    std::vector<Step> steps = {};
};

struct ModelViewLayer {
    std::string file;  // the problem file it was traced from ("" for a model traced in memory)
    long layer = 0;    // the model's layer index (its model directory's), else the file's position
    std::vector<ModelViewHead> heads;
};

struct ModelView {
    std::string title;                       // the page's heading: the model, or the first file's title
    std::vector<std::string> queries, keys;  // token labels (empty: numbered)
    std::size_t n = 0, m = 0;
    std::vector<ModelViewLayer> layers;
    // The tokens the page lets a reader hide (a tokenizer's special tokens: [CLS], [SEP],
    // <|endoftext|>), by position; empty: none.
    std::vector<bool> special = {};
    bool hide_special = false;  // the page opens with them hidden
};

// Fills top_key and top_weight from the weights.
ModelViewHead view_head(int head, Matrix weights);

// Per layer a table of queries × heads, each cell the key the query weighs most and its weight.
std::string model_view_text(const ModelView& view, int precision);
std::string model_view_json(const ModelView& view);

// The model view page (docs/COMMANDS.md#the-model-view-page): a grid of layers × heads,
// each cell a small heatmap of the head's weights (tokens on hover; a "lines" control
// draws bertviz's lines between tokens instead), and a click on a cell opens that head's
// trace in the page, every cell of it explained on a click by its step's formula and the
// cells it is computed from. `explain` says how to get a dot product's whole arithmetic:
// a text with {layer}, {file}, {cell} and {head} for the page to fill in (e.g. an
// `attn-trace explain` command line); "" says nothing.
std::string model_view_html(const ModelView& view, int precision, const std::string& explain);

}  // namespace attn_trace
