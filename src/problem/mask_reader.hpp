#pragma once
// Mask specs read from JSON (docs/PROBLEM.md#masks,
// docs/FAMILY.md#sparse-patterns-which-pairs-are-scored-at-all): a problem file's `mask`
// and `sparse` and a --mask given as JSON share this one reader.
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "attn_trace/mask.hpp"
#include "json/json_reader.hpp"

namespace attn_trace {

// One spec at `path`: a string form, or an object with one key (window,
// key_valid, additive, allowed, blocked, sparse), for n queries and m keys.
MaskSpec read_mask_spec(const nlohmann::json& value, const std::string& path, const JsonReader& reader, std::size_t n, std::size_t m);

// The body of a `sparse` spec (the object after "sparse"), its random blocks drawn for n and m.
MaskSpec read_sparse_spec(const nlohmann::json& body, const std::string& path, const JsonReader& reader, std::size_t n, std::size_t m);

// What a mask of the wrong shape is told: read_mask_spec says it before a random
// additive mask is made, validate_masks for masks given by value.
std::string mask_shape_error(std::size_t n, std::size_t m, const std::string& label, std::size_t rows, std::size_t cols);

}  // namespace attn_trace
