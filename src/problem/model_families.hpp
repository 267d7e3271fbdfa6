#pragma once
// The decoder families a model directory may hold (docs/FAMILY.md#models-from-their-own-configuration):
// one table row each, saying where a layer's attention tensors live, which it reads, which
// it knowingly leaves, and the family's own rules (qk-norm, Gemma's scale and softcap,
// which layers slide). Adding a family that fits these columns is one row.
#include <optional>
#include <string>
#include <vector>

namespace attn_trace {

struct ModelFamily {
    std::string model_type;
    // The layer's attention prefix, "{L}" standing for the layer; each is also tried
    // without its first part (bare checkpoints) and, for multimodal ones, below a
    // language model.
    std::string prefix;
    // separate: three tensors (`separate` names them); fused_rows: phi3's qkv_proj, the rows
    // of q, then k, then v; fused_per_head: query_key_value laid out head by head,
    // [head][q, k, v][d]; conv1d_columns: GPT-2's c_attn, a Conv1D stored (in, out) with the
    // columns of q, k and v side by side (its c_proj (in, out) too); mla: DeepSeek-V3's
    // latent projections (model_reader.cpp's mla_keys).
    enum class Layout { separate, fused_rows, fused_per_head, conv1d_columns, mla } layout = Layout::separate;
    std::vector<std::string> separate = {"q_proj", "k_proj", "v_proj"};
    std::string fused = "";        // the fused tensor's name
    std::string out = "o_proj";    // the output projection's
    // Where positions enter: RoPE in the layer, ALiBi's biases (BLOOM), or absolute
    // embeddings added before the first layer (GPT-2, BERT), which the layer never sees.
    enum class Positions { rope, alibi, absolute } positions = Positions::rope;
    bool causal = true;            // decoders; BERT's encoder reads every key (unless is_decoder)
    double partial_rotary = 1.0;   // the rotary fraction when the config gives none (GPT-NeoX: 0.25)
    enum class QkNorm { none, per_head, whole, per_head_plus_one } qk_norm = QkNorm::none;
    bool gemma_scale = false;  // scale (query_pre_attn_scalar)^(−1/2), attn_logit_softcapping
    // Which layers slide when the config has no layer_types list.
    enum class Sliding { none, every_layer, after_max_window_layers, even_layers, pattern } sliding = Sliding::none;
    std::vector<std::string> ignored = {};  // tensors under the prefix that hold no attention maths (buffers)
};

// The row for a config's model_type, or nullptr.
const ModelFamily* model_family(const std::string& model_type);
// Every model_type the table holds, in its order.
std::vector<std::string> model_types();

}  // namespace attn_trace
