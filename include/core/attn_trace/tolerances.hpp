#pragma once
// Every tolerance the project uses, in one table, each with its reason.
#include "attn_trace/compare.hpp"

namespace attn_trace::tolerances {

// `check` when an expect entry gives none
// (docs/PROBLEM.md#expect-values-for-attn-trace-check): hand-worked examples print 3-4
// decimals, so 1e-4 accepts their rounding and nothing more.
inline constexpr Tolerance check_default{1e-4, 0.0};

// Two float64 computations of the same formula in a different order (tiled vs
// full, decode vs full): a few ulps of values of order 1, summed over m keys.
inline constexpr Tolerance same_math_f64{1e-12, 0.0};

// float32 against float64 for inputs of order 1: float32 keeps ~7 digits, and
// sums over up to a few thousand terms lose about one more.
inline constexpr Tolerance f32_vs_f64{1e-5, 1e-5};

// Two float32 computations of the same formula in a different order (the fast path,
// tiled or decode against the full trace, all in float32): a few ulps of float32
// (1.2e-7) on values up to about 10, summed over a handful of keys.
inline constexpr Tolerance same_math_f32{2e-5, 0.0};

// PyTorch golden files in float64: the same formula, different summation order.
inline constexpr Tolerance golden_f64{1e-10, 0.0};

}  // namespace attn_trace::tolerances
