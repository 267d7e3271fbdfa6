#pragma once
// IEEE 754 binary16 (f16) and bfloat16 (bf16) conversions, written out by hand: round
// to nearest, ties to even; overflow to ±inf as IEEE does (f16: |x| ≥ 65520 becomes
// inf, 65504 is the largest finite; bf16: |x| ≥ 0x1.ffp127); f16 subnormals rounded
// like any other value; ±0, ±inf and the sign of a NaN kept. A NaN stays NaN, made
// quiet, with as much of its payload as fits (never inf). Debian 12's Highway (1.0.3)
// can't be used for this: it converts f32 → bf16 by truncation, and its f16 demotion
// on the baseline target clamps instead of overflowing.
#include <cstdint>

namespace attn_trace {

std::uint16_t f32_to_f16_bits(float x);
float f16_bits_to_f32(std::uint16_t bits);  // exact: every f16 is a float
std::uint16_t f32_to_bf16_bits(float x);
float bf16_bits_to_f32(std::uint16_t bits);  // exact: bf16 is a float's top 16 bits

// x rounded to the nearest f16 / bf16 and widened back: the value a half-precision
// store and load would leave.
float round_to_f16(float x);
float round_to_bf16(float x);

}  // namespace attn_trace
