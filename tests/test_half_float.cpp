// The f16 and bf16 conversions (include/core/attn_trace/half_float.hpp) against a
// reference computed another way: in double, where every float and every f16 or
// bf16 value is exact, the two neighbours of |x| on the format's grid are found by
// floor() and the nearer taken, a tie going to the even multiple of the step. Where
// the compiler has _Float16 (GCC 12 on x86-64: libgcc's software conversion, round
// to nearest even), the f16 bit patterns are held to it as well, NaNs included;
// clang 14 has no _Float16 on x86-64, so there only the double reference runs.
//
// Every check compares a rounded result, so a conversion that truncated instead of
// rounding to nearest even fails on each pattern whose dropped bits are over half a
// step (and one that rounded ties away from zero, on each odd tie).
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "attn_trace/dtype.hpp"
#include "attn_trace/half_float.hpp"

using namespace attn_trace;

namespace {

float float_of(std::uint32_t u) { return std::bit_cast<float>(u); }
std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }

constexpr float inf = std::numeric_limits<float>::infinity();

struct Format {
    int precision;     // significand bits, the leading one included
    int min_exponent;  // of the smallest normal
    double largest;    // finite
};
constexpr Format f16{11, -14, 65504.0};
constexpr Format bf16{8, -126, 0x1.fep127};

// x rounded to `format`, to nearest, ties to even, as a double (exact: see the top).
// Overflow as IEEE: the value rounded with an unbounded exponent; above the largest
// finite it is inf.
double reference_round(float x, Format format) {
    const double magnitude = std::fabs(static_cast<double>(x));
    if (magnitude == 0.0 || std::isinf(magnitude)) return static_cast<double>(x);
    int exponent = 0;
    std::frexp(magnitude, &exponent);  // magnitude ∈ [2^(exponent − 1), 2^exponent)
    const double step = std::ldexp(1.0, std::max(exponent - 1, format.min_exponent) - (format.precision - 1));
    const double steps_below = std::floor(magnitude / step);
    const double below = steps_below * step, above = below + step;
    double rounded = 0.0;
    if (magnitude - below != above - magnitude) rounded = magnitude - below < above - magnitude ? below : above;
    else rounded = std::fmod(steps_below, 2.0) == 0.0 ? below : above;
    if (rounded > format.largest) rounded = std::numeric_limits<double>::infinity();
    return std::copysign(rounded, static_cast<double>(x));
}

// f16's value by its definition: (−1)^s · 2^(e − 15) · 1.m, or 2^-14 · 0.m for e = 0.
double reference_f16_value(std::uint16_t h) {
    const int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    const double magnitude = exponent == 0    ? std::ldexp(mantissa, -24)
                             : exponent == 31 ? std::numeric_limits<double>::infinity()  // NaNs aren't asked
                                              : std::ldexp(1024 + mantissa, exponent - 25);
    return (h & 0x8000) != 0 ? -magnitude : magnitude;
}

std::string hex(std::uint32_t u) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08x", u);
    return text;
}

// For one float pattern: both round trips equal the reference bit for bit (−0 too).
// A NaN stays NaN with its sign, quiet. Returns what is wrong, or "".
//
// Only the round trips are compared with the reference: f16_bits_to_f32 is checked
// to be one to one on every non-NaN pattern (below), so a right value can only come
// from the right pattern.
std::string check_pattern(std::uint32_t u) {
    const float x = float_of(u);
    const float to_f16 = round_to_f16(x), to_bf16 = round_to_bf16(x);
    if (std::isnan(x)) {
        for (const float r : {to_f16, to_bf16})
            if (!std::isnan(r) || std::signbit(r) != std::signbit(x) || (bits_of(r) & 0x00400000u) == 0) return hex(u) + ": NaN became " + hex(bits_of(r));
        return "";
    }
    const float want_f16 = static_cast<float>(reference_round(x, f16)), want_bf16 = static_cast<float>(reference_round(x, bf16));
    if (bits_of(to_f16) != bits_of(want_f16)) return hex(u) + ": round_to_f16 gave " + hex(bits_of(to_f16)) + ", want " + hex(bits_of(want_f16));
    if (bits_of(to_bf16) != bits_of(want_bf16)) return hex(u) + ": round_to_bf16 gave " + hex(bits_of(to_bf16)) + ", want " + hex(bits_of(want_bf16));
    return "";
}

#ifdef __FLT16_MANT_DIG__
std::string check_against_float16(std::uint32_t u) {
    const auto want = std::bit_cast<std::uint16_t>(static_cast<_Float16>(float_of(u)));
    const std::uint16_t got = f32_to_f16_bits(float_of(u));
    return got == want ? "" : hex(u) + ": f32_to_f16_bits gave " + hex(got) + ", _Float16 " + hex(want);
}
#endif

// Runs `check` over `patterns`, keeping the first few failures.
template <typename Patterns, typename Check>
std::vector<std::string> failures_over(const Patterns& patterns, Check check) {
    std::vector<std::string> failures;
    for (const std::uint32_t u : patterns) {
        std::string failure = check(u);
        if (!failure.empty() && failures.size() < 10) failures.push_back(std::move(failure));
    }
    return failures;
}

// Every exponent (0 to 255: zeros and f32 subnormals, inf and NaN included), both
// signs, with the mantissas where rounding decides something, for every number of
// dropped bits k (f16 drops 13 bits from a normal and 14 to 24 from a subnormal;
// bf16 drops 16): the low k bits 0, 1, just under, at and over the tie, all ones,
// under kept bits even, odd, and all ones (where rounding carries into the exponent).
std::vector<std::uint32_t> boundary_patterns() {
    std::set<std::uint32_t> mantissas;
    for (std::uint32_t k = 1; k <= 24; ++k) {
        const std::uint32_t step = 1u << k, tie = step >> 1;
        for (const std::uint32_t high : {0u, step, 3 * step, 0x7fffffu & ~(step - 1), (0x7fffffu & ~(step - 1)) - step})
            for (const std::uint32_t low : {0u, 1u, tie - 1, tie, tie + 1, step - 1}) {
                const std::uint32_t mantissa = high + low;
                if (mantissa <= 0x7fffffu) mantissas.insert(mantissa);
            }
    }
    std::vector<std::uint32_t> patterns;
    for (std::uint32_t sign_exponent = 0; sign_exponent < 512; ++sign_exponent)
        for (const std::uint32_t mantissa : mantissas) patterns.push_back((sign_exponent << 23) | mantissa);
    return patterns;
}

// Every mantissa of the binades where f16's edges are (positive; the boundary
// patterns cover the signs): the overflow binade [32768, 65536), the largest
// subnormals (rounding up into the smallest normal), [2^-25, 2^-24) (rounding to 0
// or 2^-24). Every f32 pattern, 2^32 of them, was checked once against _Float16 and
// this reference, but takes minutes; three binades take a fraction of a second.
std::vector<std::uint32_t> whole_binades() {
    std::vector<std::uint32_t> patterns;
    for (const std::uint32_t exponent : {142u, 112u, 102u})
        for (std::uint32_t mantissa = 0; mantissa <= 0x7fffffu; ++mantissa) patterns.push_back((exponent << 23) | mantissa);
    return patterns;
}

std::vector<std::uint32_t> random_patterns() {
    std::mt19937 generator(20240611);
    std::vector<std::uint32_t> patterns(1 << 20);
    for (auto& u : patterns) u = static_cast<std::uint32_t>(generator());
    return patterns;
}

}  // namespace

TEST_CASE("f16 and bf16 round to nearest even: the explicit cases", "[half]") {
    // f16's top: 65504 is the largest finite, 65520 the tie with 2^16, which is even, so inf.
    CHECK(round_to_f16(65504.0f) == 65504.0f);
    CHECK(round_to_f16(65519.99f) == 65504.0f);
    CHECK(round_to_f16(65520.0f) == inf);
    CHECK(round_to_f16(-65520.0f) == -inf);
    CHECK(f32_to_f16_bits(65520.0f) == 0x7c00);
    CHECK(f32_to_f16_bits(1e30f) == 0x7c00);  // overflow, not a clamp to 65504
    CHECK(round_to_f16(65505.0f) == 65504.0f);
    CHECK(round_to_f16(65500.0f) == 65504.0f);  // truncation would give 65472
    // Subnormals: 2^-24 is the smallest, 2^-25 the tie with 0 (even), a hair above rounds up.
    CHECK(f32_to_f16_bits(0x1p-24f) == 0x0001);
    CHECK(round_to_f16(0x1p-24f) == 0x1p-24f);
    CHECK(f32_to_f16_bits(0x1p-25f) == 0x0000);
    CHECK(f32_to_f16_bits(-0x1p-25f) == 0x8000);
    CHECK(f32_to_f16_bits(0x1.000002p-25f) == 0x0001);  // truncation would give 0
    CHECK(f32_to_f16_bits(0x1.8p-24f) == 0x0002);       // 1.5 · 2^-24: tie, up to even 2
    CHECK(f32_to_f16_bits(0x1.4p-23f) == 0x0002);       // 2.5 · 2^-24: tie, down to even 2
    CHECK(f32_to_f16_bits(0x1p-40f) == 0x0000);
    // The largest subnormal 0x3ff · 2^-24 rounds up into the smallest normal 2^-14.
    CHECK(f32_to_f16_bits(0x1.ff8p-15f) == 0x03ff);
    CHECK(f32_to_f16_bits(0x1.ffcp-15f) == 0x0400);     // 1023.5 · 2^-24: tie, up to even (truncation: 0x3ff)
    CHECK(f32_to_f16_bits(0x1.ffbffep-15f) == 0x03ff);  // just under the tie
    CHECK(f32_to_f16_bits(0x1.ffc002p-15f) == 0x0400);
    CHECK(round_to_f16(0x1.ffcp-15f) == 0x1p-14f);
    // Normals: 1 + 2^-11 is the tie between 1 and 1 + 2^-10, down to 1 (even);
    // 1 + 3 · 2^-11 the tie between 1 + 2^-10 (odd) and 1 + 2^-9, up.
    CHECK(round_to_f16(1.0f + 0x1p-11f) == 1.0f);
    CHECK(round_to_f16(1.0f + 3 * 0x1p-11f) == 1.0f + 0x1p-9f);  // truncation would give 1 + 2^-10
    CHECK(round_to_f16(0x1.002002p0f) == 1.0f + 0x1p-10f);  // 1 + 2^-11 + 2^-23: over the tie
    CHECK(round_to_f16(0x1.fffp0f) == 2.0f);  // carries into the exponent
    // bf16 keeps 8 significand bits: 1 + 2^-8 is the tie between 1 and 1 + 2^-7, to 1;
    // 1 + 3 · 2^-8 the tie between 1 + 2^-7 (odd) and 1 + 2^-6, up.
    CHECK(round_to_bf16(1.0f + 0x1p-8f) == 1.0f);
    CHECK(round_to_bf16(1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f);  // truncation would give 1 + 2^-7
    CHECK(f32_to_bf16_bits(1.0f + 3 * 0x1p-8f) == 0x3f82);
    CHECK(round_to_bf16(0x1.010002p0f) == 1.0f + 0x1p-7f);  // 1 + 2^-8 + 2^-23: over the tie
    // bf16's largest finite 0x1.fep127 (0x7f7f); 0x1.ffp127 is the tie with 2^128, so inf.
    CHECK(f32_to_bf16_bits(0x1.fep127f) == 0x7f7f);
    CHECK(bf16_bits_to_f32(0x7f7f) == 0x1.fep127f);
    CHECK(f32_to_bf16_bits(0x1.fefffep127f) == 0x7f7f);
    CHECK(f32_to_bf16_bits(0x1.ffp127f) == 0x7f80);  // truncation would give 0x7f7f
    CHECK(f32_to_bf16_bits(-std::numeric_limits<float>::max()) == 0xff80);
    CHECK(round_to_bf16(std::numeric_limits<float>::max()) == inf);
    // bf16 keeps f32's subnormals, in steps of 2^-133 (0x0001); f32's smallest,
    // 2^-149, is under half a step and rounds to 0.
    CHECK(f32_to_bf16_bits(0x1p-133f) == 0x0001);
    CHECK(f32_to_bf16_bits(0x1.8p-133f) == 0x0002);  // tie, up to even
    CHECK(f32_to_bf16_bits(0x1p-134f) == 0x0000);    // tie, down to even 0
    CHECK(f32_to_bf16_bits(std::numeric_limits<float>::denorm_min()) == 0x0000);
    // ±0 and ±inf, and −0's sign.
    CHECK(f32_to_f16_bits(0.0f) == 0x0000);
    CHECK(f32_to_f16_bits(-0.0f) == 0x8000);
    CHECK(std::signbit(round_to_f16(-0.0f)));
    CHECK(std::signbit(round_to_f16(-0x1p-30f)));  // underflows to −0, not +0
    CHECK(f32_to_bf16_bits(-0.0f) == 0x8000);
    CHECK(std::signbit(round_to_bf16(-0.0f)));
    CHECK(f32_to_f16_bits(inf) == 0x7c00);
    CHECK(f32_to_f16_bits(-inf) == 0xfc00);
    CHECK(f32_to_bf16_bits(inf) == 0x7f80);
    CHECK(f32_to_bf16_bits(-inf) == 0xff80);
    CHECK(f16_bits_to_f32(0xfc00) == -inf);
    CHECK(bf16_bits_to_f32(0x7f80) == inf);
}

TEST_CASE("f16 and bf16 keep a NaN a NaN: its sign kept, quieted, the payload's top kept", "[half]") {
    // A payload only in the low bits is lost, but the result must not become inf
    // (0x7c00 / 0x7f80), which a plain shift or rounding would give.
    CHECK(f32_to_f16_bits(float_of(0x7f800001u)) == 0x7e00);
    CHECK(f32_to_bf16_bits(float_of(0x7f800001u)) == 0x7fc0);
    CHECK(f32_to_bf16_bits(float_of(0xff800001u)) == 0xffc0);
    // All ones: rounding it like a number would carry into the sign (0x8000, −0).
    CHECK(f32_to_bf16_bits(float_of(0x7fffffffu)) == 0x7fff);
    CHECK(f32_to_f16_bits(float_of(0x7fffffffu)) == 0x7fff);
    // Signaling NaNs come out quiet, with the payload's top bits.
    CHECK(f32_to_f16_bits(float_of(0x7fa00000u)) == 0x7f00);
    CHECK(f32_to_f16_bits(float_of(0xff802000u)) == 0xfe01);
    CHECK(f32_to_f16_bits(float_of(0x7f812345u)) == 0x7e09);
    CHECK(f32_to_bf16_bits(float_of(0x7f812345u)) == 0x7fc1);
    CHECK(f32_to_f16_bits(float_of(0xffc00000u)) == 0xfe00);
    // Widening: the payload moves to the top of float's mantissa, quieted.
    CHECK(bits_of(f16_bits_to_f32(0x7d00)) == 0x7fe00000u);
    CHECK(bits_of(f16_bits_to_f32(0xfe01)) == 0xffc02000u);
    CHECK(bits_of(f16_bits_to_f32(0x7c01)) == 0x7fc02000u);
    CHECK(bits_of(bf16_bits_to_f32(0x7f81)) == 0x7fc10000u);
    CHECK(bits_of(bf16_bits_to_f32(0xffc0)) == 0xffc00000u);
    CHECK(std::isnan(round_to_f16(std::numeric_limits<float>::quiet_NaN())));
    CHECK(std::isnan(round_to_bf16(-std::numeric_limits<float>::signaling_NaN())));
    CHECK(std::signbit(round_to_bf16(-std::numeric_limits<float>::signaling_NaN())));
}

TEST_CASE("every f16 and bf16 pattern widens to its value and converts back to itself", "[half]") {
    std::vector<std::string> failures;
    for (std::uint32_t h = 0; h <= 0xffff; ++h) {
        const auto bits = static_cast<std::uint16_t>(h);
        const float f16_value = f16_bits_to_f32(bits), bf16_value = bf16_bits_to_f32(bits);
        const bool f16_nan = (h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0, bf16_nan = (h & 0x7f80) == 0x7f80 && (h & 0x007f) != 0;
        // f16: the value by the definition (so the widening is one to one: the
        // definition is); NaNs quieted, back to the pattern with the quiet bit set.
        if (f16_nan ? !std::isnan(f16_value) : (static_cast<double>(f16_value) != reference_f16_value(bits) || std::signbit(f16_value) != ((h & 0x8000) != 0)))
            failures.push_back("f16 " + hex(h) + " widened to " + hex(bits_of(f16_value)));
        if (f32_to_f16_bits(f16_value) != (f16_nan ? (h | 0x0200) : h)) failures.push_back("f16 " + hex(h) + " did not come back");
        // bf16: the float with these top 16 bits (quieted if a NaN).
        if (bits_of(bf16_value) != ((h << 16) | (bf16_nan ? 0x00400000u : 0u))) failures.push_back("bf16 " + hex(h) + " widened to " + hex(bits_of(bf16_value)));
        if (f32_to_bf16_bits(bf16_value) != (bf16_nan ? (h | 0x0040) : h)) failures.push_back("bf16 " + hex(h) + " did not come back");
#ifdef __FLT16_MANT_DIG__
        if (bits_of(f16_value) != bits_of(static_cast<float>(std::bit_cast<_Float16>(bits)))) failures.push_back("f16 " + hex(h) + " widened unlike _Float16");
#endif
        if (failures.size() >= 10) break;
    }
    INFO(Catch::Detail::stringify(failures));
    CHECK(failures.empty());
}

TEST_CASE("f32 to f16 and bf16 match the exact reference at every exponent's rounding boundaries", "[half]") {
    const std::vector<std::uint32_t> boundaries = boundary_patterns(), binades = whole_binades(), random = random_patterns();
    for (const auto* patterns : {&boundaries, &binades, &random}) {
        const auto failures = failures_over(*patterns, check_pattern);
        INFO(patterns->size() << " patterns: " << Catch::Detail::stringify(failures));
        CHECK(failures.empty());
    }
#ifdef __FLT16_MANT_DIG__
    // libgcc's conversion is slow (~80 ns), so not over the whole binades.
    for (const auto* patterns : {&boundaries, &random}) {
        const auto failures = failures_over(*patterns, check_against_float16);
        INFO(patterns->size() << " patterns against _Float16: " << Catch::Detail::stringify(failures));
        CHECK(failures.empty());
    }
#endif
}

// round_to(half, double) rounds a double once (docs/PROBLEM.md#dtype-half-precision): through
// round-to-odd to float, never float's own rounding first. 1 + 2⁻¹¹ + 2⁻⁴⁰ rounds to float as
// the f16 tie 1 + 2⁻¹¹, which ties to even (1); rounded once it is above the tie (1 + 2⁻¹⁰).
TEST_CASE("round_to rounds a double to a half type once, not through float's rounding", "[half]") {
    CHECK(round_to(Dtype::f16, 1 + 0x1p-11 + 0x1p-40) == 1 + 0x1p-10);
    CHECK(round_to(Dtype::f16, 1 + 0x1p-11 - 0x1p-40) == 1.0);
    CHECK(round_to(Dtype::f16, 1 + 0x1p-11) == 1.0);  // the tie itself: to even
    CHECK(round_to(Dtype::bf16, 1 + 0x1p-8 + 0x1p-40) == 1 + 0x1p-7);
    CHECK(round_to(Dtype::bf16, 1 + 0x1p-8 - 0x1p-40) == 1.0);
    CHECK(round_to(Dtype::f16, 65520 - 0x1p-30) == 65504.0);
    CHECK(std::isinf(round_to(Dtype::f16, 65520.0)));
    CHECK(round_to(Dtype::f16, 0x1p-25 + 0x1p-60) == 0x1p-24);  // above half the smallest subnormal
    CHECK(std::signbit(round_to(Dtype::f16, -0x1p-60)));       // underflow keeps the sign
    CHECK(std::isinf(round_to(Dtype::bf16, 1e300)));
    CHECK(round_to(Dtype::f32, 1 + 0x1p-24 + 0x1p-40) == 1 + 0x1p-23);
}
