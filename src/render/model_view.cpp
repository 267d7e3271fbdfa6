#include "attn_trace/model_view.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn_trace/text_width.hpp"

namespace attn_trace {

namespace {

std::string label(const std::vector<std::string>& labels, std::size_t i) { return i < labels.size() ? labels[i] : std::to_string(i); }

// `text` padded with spaces to `width` terminal columns, on the left or the right.
std::string padded(const std::string& text, std::size_t width, bool right) {
    const std::string room(width - std::min(width, display_width(text)), ' ');
    return right ? room + text : text + room;
}

}  // namespace

ModelViewHead view_head(int head, Matrix weights) {
    ModelViewHead out{head, std::move(weights), {}, {}};
    for (std::size_t i = 0; i < out.weights.rows(); ++i) {
        const double* row = out.weights.row(i);
        const auto top = static_cast<std::size_t>(std::max_element(row, row + out.weights.cols()) - row);
        out.top_key.push_back(top);
        out.top_weight.push_back(row[top]);
    }
    return out;
}

std::string model_view_text(const ModelView& view, int precision) {
    std::size_t heads = 0;
    for (const auto& layer : view.layers) heads = std::max(heads, layer.heads.size());
    std::string text = fmt::format("attn-trace view: {} layer{}, up to {} head{} each, {} queries over {} keys\n"
                                   "each cell: the key the query weighs most, and its weight\n",
                                   view.layers.size(), view.layers.size() == 1 ? "" : "s", heads, heads == 1 ? "" : "s", view.n, view.m);
    std::size_t query_width = 0;
    for (std::size_t i = 0; i < view.n; ++i) query_width = std::max(query_width, display_width(label(view.queries, i)));
    for (const auto& layer : view.layers) {
        // One cell per head, "key 0.1234", every column as wide as its widest cell.
        std::vector<std::vector<std::string>> cells(layer.heads.size());
        std::vector<std::size_t> widths;
        for (const auto& head : layer.heads) {
            auto& column = cells[widths.size()];
            std::size_t width = display_width(fmt::format("head {}", head.head));
            for (std::size_t i = 0; i < view.n; ++i) {
                column.push_back(fmt::format("{} {:.{}f}", label(view.keys, head.top_key[i]), head.top_weight[i], precision));
                width = std::max(width, display_width(column.back()));
            }
            widths.push_back(width);
        }
        text += fmt::format("\nlayer {}  ({})\n{}", layer.layer, layer.file, std::string(query_width, ' '));
        for (std::size_t h = 0; h < layer.heads.size(); ++h) text += "  " + padded(fmt::format("head {}", layer.heads[h].head), widths[h], true);
        text += "\n";
        for (std::size_t i = 0; i < view.n; ++i) {
            text += padded(label(view.queries, i), query_width, false);
            for (std::size_t h = 0; h < layer.heads.size(); ++h) text += "  " + padded(cells[h][i], widths[h], true);
            text += "\n";
        }
    }
    return text;
}

std::string model_view_json(const ModelView& view) {
    nlohmann::ordered_json layers = nlohmann::ordered_json::array();
    for (const auto& layer : view.layers) {
        nlohmann::ordered_json heads = nlohmann::ordered_json::array();
        for (const auto& head : layer.heads) {
            nlohmann::ordered_json weights = nlohmann::ordered_json::array();
            for (std::size_t i = 0; i < head.weights.rows(); ++i) weights.push_back(std::vector<double>(head.weights.row(i), head.weights.row(i) + head.weights.cols()));
            heads.push_back({{"head", head.head}, {"top_key", head.top_key}, {"top_weight", head.top_weight}, {"weights", weights}});
        }
        layers.push_back({{"layer", layer.layer}, {"file", layer.file}, {"heads", heads}});
    }
    const nlohmann::ordered_json out = {{"attn_trace", 1}, {"command", "view"}, {"n", view.n}, {"m", view.m},
                                        {"queries", view.queries}, {"keys", view.keys}, {"layers", layers}};
    return out.dump() + "\n";
}

}  // namespace attn_trace
