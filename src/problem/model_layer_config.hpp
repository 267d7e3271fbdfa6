#pragma once
// A model directory's layer as config.json describes it beyond its tensors: which
// attention the layer has (full or sliding, and the window) and its RoPE, in
// transformers' names (docs/PROBLEM.md#a-model-directory-checkpointmodel).
#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "model_directory.hpp"
#include "model_families.hpp"

namespace attn_trace {

struct LayerKind {
    std::string type = "full_attention";
    std::optional<long> window;
};

// Which attention this layer has: the config's layer_types, else the family's rule.
LayerKind layer_kind(const ModelDirectory& dir, const ModelFamily& family, long layer);

// The rope dictionary that applies to this layer, in transformers 5's form or built from
// the older rope_theta + rope_scaling; `field` names where it came from.
nlohmann::json rope_parameters(const ModelDirectory& dir, const ModelFamily& family, const LayerKind& kind, std::string& field);

// The problem's "rope" for the layer (half style, as transformers' rotate_half), and the
// summary's rope object.
nlohmann::json rope_of(const ModelDirectory& dir, const ModelFamily& family, const nlohmann::json& params, const std::string& field, std::size_t head_dim,
                       nlohmann::ordered_json& summary);

}  // namespace attn_trace
