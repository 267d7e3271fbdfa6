#include "attn_trace/dtype.hpp"

#include <bit>
#include <cstdint>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/half_float.hpp"

namespace attn_trace {

std::string dtype_name(Dtype dtype) {
    switch (dtype) {
        case Dtype::f64: return "f64";
        case Dtype::f32: return "f32";
        case Dtype::f16: return "f16";
        case Dtype::bf16: return "bf16";
    }
    return "f64";
}

Dtype parse_dtype(const std::string& text, const std::string& where) {
    for (Dtype dtype : {Dtype::f64, Dtype::f32, Dtype::f16, Dtype::bf16})
        if (text == dtype_name(dtype)) return dtype;
    throw InputError(fmt::format("{}: expected {}, found \"{}\"", where, dtype_choices, text));
}

double dtype_bytes(Dtype dtype) { return dtype == Dtype::f64 ? 8 : dtype == Dtype::f32 ? 4 : 2; }

double unit_roundoff(Dtype dtype) {
    switch (dtype) {
        case Dtype::f64: return 0x1p-53;
        case Dtype::f32: return 0x1p-24;
        case Dtype::f16: return 0x1p-11;
        case Dtype::bf16: return 0x1p-8;
    }
    return 0x1p-53;
}

namespace {

// x rounded to float with round-to-odd: an inexact result keeps an odd last bit, so a
// second rounding to a type with fewer bits (f16, bf16) lands where one rounding of x would.
float to_float_odd(double x) {
    const float rounded = static_cast<float>(x);
    const double back = static_cast<double>(rounded);
    if (back == x || back != back) return rounded;
    std::uint32_t bits = std::bit_cast<std::uint32_t>(rounded);
    if ((bits & 1u) == 0) bits = (back > x) == (x > 0) ? bits - 1 : bits + 1;  // toward x in magnitude
    return std::bit_cast<float>(bits);
}

}  // namespace

double round_to(Dtype dtype, double x) {
    switch (dtype) {
        case Dtype::f64: return x;
        case Dtype::f32: return static_cast<double>(static_cast<float>(x));
        case Dtype::f16: return static_cast<double>(round_to_f16(to_float_odd(x)));
        case Dtype::bf16: return static_cast<double>(round_to_bf16(to_float_odd(x)));
    }
    return x;
}

}  // namespace attn_trace
