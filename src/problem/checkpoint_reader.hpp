#pragma once
// "checkpoint": {"safetensors": FILE, "family": F, "layer": L, "prefix": P}
// (docs/PROBLEM.md#real-model-weights-npy-safetensors-checkpoint): one attention layer of
// a real model's checkpoint, mapped to W_Q … b_O; {"model": DIR, "layer": L} goes to
// model_reader.hpp.
#include <nlohmann/json.hpp>

#include "array_source.hpp"
#include "json/json_reader.hpp"

namespace attn_trace {

// Replaces root's "checkpoint" by the matrices it names, as {"safetensors": …}
// references with their slices and orientation (so that the loader reads and
// checks them as any matrix), and for llama sets rope's style to "half". Every
// tensor is looked up first: a missing one is an error at $.checkpoint naming the
// nearest names the file has. The families' tensor names are in docs/PROBLEM.md.
// Returns the model summary for a model directory (expand_model's), else "".
std::string expand_checkpoint(nlohmann::json& root, ArraySource& arrays, const JsonReader& reader);

}  // namespace attn_trace
