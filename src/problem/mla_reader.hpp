#pragma once
// The `mla` key (docs/PROBLEM.md#sparse-mla-dropout): its matrices read and their inner
// sizes checked against one another and against X.
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "attn_trace/problem.hpp"
#include "json/json_reader.hpp"

namespace attn_trace {

// d_model: X's width; d_src: X_source's (or X's); q_width: W_Q's columns when the
// problem gives W_Q (0 otherwise: then mla needs W_DQ and W_UQ).
Mla read_mla(const nlohmann::json& value, const std::string& path, const JsonReader& reader, std::size_t d_model, std::size_t d_src, int heads,
             std::size_t q_width);

}  // namespace attn_trace
