#pragma once
// The number type a run computes in: f64, or f32 (every step rounded to float, as a
// float32 kernel would leave it).
#include <string>

namespace attn_trace {

enum class Dtype { f64, f32 };

std::string dtype_name(Dtype dtype);                                   // "f64", "f32"
Dtype parse_dtype(const std::string& text, const std::string& where);  // "f64", "f32"; `where` prefixes the error

}  // namespace attn_trace
