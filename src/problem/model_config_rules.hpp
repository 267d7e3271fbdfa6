#pragma once
// The config.json fields that change a layer's attention beyond the family table's columns
// (docs/PROBLEM.md#a-model-directory-checkpointmodel): each implemented here, or refused by
// name, so that no field is silently ignored and the layer traced wrong.
#include <optional>
#include <string>

#include "model_directory.hpp"
#include "model_families.hpp"

namespace attn_trace {

// Throws (the field named) for a field whose attention attn-trace does not implement.
void refuse_unimplemented(const ModelDirectory& dir, const ModelFamily& family);

// The softmax scale where the config sets one other than 1/√head_dim: GPT-2's
// scale_attn_weights (false: 1) and scale_attn_by_inverse_layer_idx (÷ (layer + 1)).
std::optional<double> config_scale(const ModelDirectory& dir, const ModelFamily& family, long layer, long head_dim);

// Whether queries read only earlier keys: the family's rule, and BERT's is_decoder.
bool config_causal(const ModelDirectory& dir, const ModelFamily& family);

}  // namespace attn_trace
