#include "model_families.hpp"

#include <algorithm>

namespace attn_trace {

namespace {

using F = ModelFamily;

const std::vector<ModelFamily>& table() {
    static const std::vector<ModelFamily> rows = [] {
        const std::string layers = "model.layers.{L}.self_attn.";
        const std::vector<std::string> inv_freq = {"rotary_emb.inv_freq"};
        std::vector<ModelFamily> all = {
            {.model_type = "llama", .prefix = layers, .ignored = inv_freq},
            {.model_type = "mistral", .prefix = layers, .sliding = F::Sliding::every_layer, .ignored = inv_freq},
            {.model_type = "qwen2", .prefix = layers, .sliding = F::Sliding::after_max_window_layers, .ignored = inv_freq},
            {.model_type = "qwen3", .prefix = layers, .qk_norm = F::QkNorm::per_head, .sliding = F::Sliding::after_max_window_layers, .ignored = inv_freq},
            {.model_type = "olmo2", .prefix = layers, .qk_norm = F::QkNorm::whole, .ignored = inv_freq},
            {.model_type = "gemma2", .prefix = layers, .gemma_scale = true, .sliding = F::Sliding::even_layers, .ignored = inv_freq},
            {.model_type = "gemma3_text", .prefix = layers, .qk_norm = F::QkNorm::per_head_plus_one, .gemma_scale = true, .sliding = F::Sliding::pattern,
             .ignored = inv_freq},
            {.model_type = "phi3", .prefix = layers, .layout = F::Layout::fused_rows, .fused = "qkv_proj", .sliding = F::Sliding::every_layer, .ignored = inv_freq},
            // Older GPT-NeoX checkpoints also saved the causal mask buffers.
            {.model_type = "gpt_neox", .prefix = "gpt_neox.layers.{L}.attention.", .layout = F::Layout::fused_per_head, .fused = "query_key_value",
             .out = "dense", .partial_rotary = 0.25, .ignored = {"rotary_emb.inv_freq", "bias", "masked_bias"}},
            {.model_type = "deepseek_v3", .prefix = layers, .layout = F::Layout::mla},
            {.model_type = "bloom", .prefix = "transformer.h.{L}.self_attention.", .layout = F::Layout::fused_per_head, .fused = "query_key_value",
             .out = "dense", .positions = F::Positions::alibi},
            // Older GPT-2 checkpoints also saved the causal mask buffers.
            {.model_type = "gpt2", .prefix = "transformer.h.{L}.attn.", .layout = F::Layout::conv1d_columns, .fused = "c_attn", .out = "c_proj",
             .positions = F::Positions::absolute, .ignored = {"bias", "masked_bias"}},
            // The output's LayerNorm (after the residual add) is not the attention's: `final`
            // is the output dense, before it. Older checkpoints (bert-base-uncased) name its
            // parameters gamma and beta.
            {.model_type = "bert", .prefix = "bert.encoder.layer.{L}.attention.", .separate = {"self.query", "self.key", "self.value"},
             .out = "output.dense", .positions = F::Positions::absolute, .causal = false,
             .ignored = {"output.LayerNorm.weight", "output.LayerNorm.bias", "output.LayerNorm.gamma", "output.LayerNorm.beta"}},
        };
        return all;
    }();
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
