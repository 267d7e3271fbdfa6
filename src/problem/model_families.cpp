#include "model_families.hpp"

#include <algorithm>

namespace attn_trace {

namespace {

using F = ModelFamily;

const std::vector<ModelFamily>& table() {
    static const std::vector<ModelFamily> rows = {
        {"llama", "model.layers.{L}.self_attn.", false, F::QkNorm::none, false, F::Sliding::none, {"rotary_emb.inv_freq"}},
        {"mistral", "model.layers.{L}.self_attn.", false, F::QkNorm::none, false, F::Sliding::every_layer, {"rotary_emb.inv_freq"}},
        {"qwen2", "model.layers.{L}.self_attn.", false, F::QkNorm::none, false, F::Sliding::after_max_window_layers, {"rotary_emb.inv_freq"}},
        {"qwen3", "model.layers.{L}.self_attn.", false, F::QkNorm::per_head, false, F::Sliding::after_max_window_layers, {"rotary_emb.inv_freq"}},
        {"olmo2", "model.layers.{L}.self_attn.", false, F::QkNorm::whole, false, F::Sliding::none, {"rotary_emb.inv_freq"}},
        {"gemma2", "model.layers.{L}.self_attn.", false, F::QkNorm::none, true, F::Sliding::even_layers, {"rotary_emb.inv_freq"}},
        {"gemma3_text", "model.layers.{L}.self_attn.", false, F::QkNorm::per_head_plus_one, true, F::Sliding::pattern, {"rotary_emb.inv_freq"}},
        {"phi3", "model.layers.{L}.self_attn.", true, F::QkNorm::none, false, F::Sliding::every_layer, {"rotary_emb.inv_freq"}},
    };
    return rows;
}

}  // namespace

const ModelFamily* model_family(const std::string& model_type) {
    const auto& rows = table();
    const auto found = std::find_if(rows.begin(), rows.end(), [&](const ModelFamily& f) { return f.model_type == model_type; });
    return found == rows.end() ? nullptr : &*found;
}

std::vector<std::string> model_types() {
    std::vector<std::string> out;
    for (const auto& f : table()) out.push_back(f.model_type);
    return out;
}

}  // namespace attn_trace
