#pragma once
// The number type a run stores its values in (docs/PROBLEM.md#dtype-half-precision): f64;
// f32 (every step rounded to float, as a float32 kernel would leave it); or a half type,
// f16 or bf16, where each step is computed in f32 from the stored values before it and
// its result rounded to the half type once, as attention runs op by op in half precision.
#include <string>

namespace attn_trace {

enum class Dtype { f64, f32, f16, bf16 };

std::string dtype_name(Dtype dtype);                                   // "f64", "f32", "f16", "bf16"
Dtype parse_dtype(const std::string& text, const std::string& where);  // those names; `where` prefixes the error
inline constexpr const char* dtype_choices = "f64, f32, f16 or bf16";

constexpr bool is_half(Dtype dtype) { return dtype == Dtype::f16 || dtype == Dtype::bf16; }
// The type a step's arithmetic runs in: f64 for f64, f32 for the others.
constexpr Dtype compute_dtype(Dtype dtype) { return dtype == Dtype::f64 ? Dtype::f64 : Dtype::f32; }
double dtype_bytes(Dtype dtype);  // 8, 4, 2, 2
// 2^−p, half the distance from 1 to the next number of the type (the unit roundoff).
double unit_roundoff(Dtype dtype);

// x as the dtype stores it: rounded to the nearest value of the type, ties to even,
// ±inf past its range (x itself for f64). One rounding, also from a double that is
// not a float (through round-to-odd to float, which never double-rounds a half).
double round_to(Dtype dtype, double x);

}  // namespace attn_trace
