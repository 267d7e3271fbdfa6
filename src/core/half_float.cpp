#include "attn_trace/half_float.hpp"

#include <bit>

namespace attn_trace {

namespace {

constexpr std::uint32_t f32_abs_mask = 0x7fffffffu, f32_inf = 0x7f800000u, f32_quiet = 0x00400000u;

}  // namespace

std::uint16_t f32_to_f16_bits(float x) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(x), a = u & f32_abs_mask;
    const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
    // NaN: quiet, keeping the payload's top 9 bits (what F16C's vcvtps2ph does); inf stays inf.
    if (a > f32_inf) return static_cast<std::uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x03ffu));
    // 65520 = 0x1.ffep15 is the tie between 65504 and 2^16: from there up (inf
    // included) the result is inf. Below it the rounding below stays finite.
    if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);
    if (a >= 0x38800000u) {
        // Normal (≥ 2^-14): rebias the exponent from 127 to 15, then drop 13 mantissa
        // bits to nearest even. A carry out of the mantissa steps the exponent up,
        // which is the right answer (e.g. 0x1.fffp0 → 2).
        const std::uint32_t m = a - ((127u - 15u) << 23);
        return static_cast<std::uint16_t>(sign | ((m + 0x0fffu + ((m >> 13) & 1u)) >> 13));
    }
    // Subnormal result, in units of 2^-24: below 2^-25 everything rounds to 0, and
    // 2^-25 itself is the tie between 0 and 2^-24, rounded to 0 (even) below.
    if (a < 0x33000000u) return sign;
    // a = significand × 2^(e - 150) with e ∈ [102, 112], so in units of 2^-24 it is
    // significand >> (126 - e), shifting out 14 to 24 bits. Rounding up from
    // 0x3ff gives 0x400, the smallest normal's pattern: again the right answer.
    const std::uint32_t significand = (a & 0x007fffffu) | 0x00800000u;
    const std::uint32_t shift = 126u - (a >> 23);
    const std::uint32_t kept = significand >> shift, rest = significand & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    const std::uint32_t rounded = kept + ((rest > half || (rest == half && (kept & 1u) != 0)) ? 1u : 0u);
    return static_cast<std::uint16_t>(sign | rounded);
}

float f16_bits_to_f32(std::uint16_t bits) {
    const std::uint32_t sign = (static_cast<std::uint32_t>(bits) & 0x8000u) << 16;
    const std::uint32_t exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x03ffu;
    if (exponent == 0x1fu) {
        // inf, or NaN (quieted, payload kept)
        return std::bit_cast<float>(sign | f32_inf | (mantissa << 13) | (mantissa != 0 ? f32_quiet : 0u));
    }
    if (exponent == 0) {
        // ±0 or a subnormal, mantissa × 2^-24: exact in float (a normal float), and
        // the multiplication by a power of two is exact too.
        const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
        return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(magnitude));
    }
    return std::bit_cast<float>(sign | ((exponent + (127u - 15u)) << 23) | (mantissa << 13));
}

std::uint16_t f32_to_bf16_bits(float x) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
    // NaN: keep the top of the pattern and make it quiet. Rounding it like a number
    // could carry a payload of all ones into the exponent and give inf.
    if ((u & f32_abs_mask) > f32_inf) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
    // Drop the low 16 bits to nearest even. bf16 has f32's exponent, so this is all:
    // subnormals round in the same units, and a carry past the largest finite
    // (0x1.fep127) lands on the exponent all ones, mantissa 0: inf. inf stays inf.
    return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float bf16_bits_to_f32(std::uint16_t bits) {
    std::uint32_t u = static_cast<std::uint32_t>(bits) << 16;
    if ((u & f32_abs_mask) > f32_inf) u |= f32_quiet;
    return std::bit_cast<float>(u);
}

float round_to_f16(float x) { return f16_bits_to_f32(f32_to_f16_bits(x)); }

float round_to_bf16(float x) { return bf16_bits_to_f32(f32_to_bf16_bits(x)); }

}  // namespace attn_trace
