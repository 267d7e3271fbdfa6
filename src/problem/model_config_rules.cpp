#include "model_config_rules.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

namespace attn_trace {

void refuse_unimplemented(const ModelDirectory& dir, const ModelFamily& family) {
    const nlohmann::json& c = dir.config();
    if (dir.has("use_bidirectional_attention") && !(c["use_bidirectional_attention"].is_boolean() && !c["use_bidirectional_attention"].get<bool>()))
        dir.fail("use_bidirectional_attention", "bidirectional attention in a decoder family is not implemented: the layer is refused rather than traced causal");
    for (const char* field : {"attention_chunk_size", "clip_qkv", "attn_temperature_tuning", "qk_layernorm", "use_qk_norm", "logits_soft_cap"})
        if (dir.has(field) && !(c[field].is_boolean() && !c[field].get<bool>()))
            dir.fail(field, "changes the layer's attention in a way attn-trace does not implement: the layer is refused rather than traced wrong");
    // GPT-2's reorder_and_upcast_attn changes only the order and type of float16
    // arithmetic, which attn-trace's own dtype decides: not a different attention.
    if (family.model_type == "gpt2" && dir.flag("add_cross_attention", false))
        dir.fail("add_cross_attention", "a GPT-2 with cross-attention layers is not read: the layer is refused rather than traced without them");
    if (family.model_type == "bert" && dir.has("position_embedding_type") &&
        !(c["position_embedding_type"].is_string() && c["position_embedding_type"].get<std::string>() == "absolute"))
        dir.fail("position_embedding_type", "relative position embeddings change BERT's scores and are not implemented: only \"absolute\" is read");
}

std::optional<double> config_scale(const ModelDirectory& dir, const ModelFamily& family, long layer, long head_dim) {
    if (family.model_type != "gpt2") return std::nullopt;
    const bool scaled = dir.flag("scale_attn_weights", true), by_layer = dir.flag("scale_attn_by_inverse_layer_idx", false);
    if (scaled && !by_layer) return std::nullopt;
    double scale = scaled ? 1.0 / std::sqrt(static_cast<double>(head_dim)) : 1.0;
    if (by_layer) scale /= static_cast<double>(layer + 1);
    return scale;
}

bool config_causal(const ModelDirectory& dir, const ModelFamily& family) {
    return family.causal || (family.model_type == "bert" && dir.flag("is_decoder", false));
}

}  // namespace attn_trace
