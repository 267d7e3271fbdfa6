#pragma once
// "checkpoint": {"model": DIR, "layer": L} (docs/PROBLEM.md#a-model-directory-checkpointmodel):
// one attention layer of a Hugging Face model directory, from its config.json and its
// safetensors (one file or shards), through the family table (model_families.hpp).
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "array_source.hpp"
#include "attn_trace/dtype.hpp"
#include "json/json_reader.hpp"

namespace attn_trace {

// Replaces root's "checkpoint" by the problem keys the model decides (heads, kv_heads,
// the projections as safetensors references, rope, qk_norm, scale, softcap, the model's
// mask combined with the file's) and returns what it resolved: the JSON text of
// `problem.model` (its rope's attention_factor is added once the positions are known). Refuses (InputError / JsonPathError, exit 2) a key the model decides given
// beside it, a config field or a tensor under the layer's prefix that it would
// otherwise ignore.
std::string expand_model(nlohmann::json& root, ArraySource& arrays, const JsonReader& reader);

// The number type of a safetensors dtype name (F64, F32, F16, BF16); unset for any other.
std::optional<Dtype> stored_dtype(const std::string& safetensors_dtype);

}  // namespace attn_trace
