#include "scalar_widening.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attn_trace {

double half_to_double(std::uint16_t bits) {
    const double sign = (bits & 0x8000) ? -1.0 : 1.0;
    const int exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
    if (exponent == 0x1f) return mantissa ? std::numeric_limits<double>::quiet_NaN() : sign * std::numeric_limits<double>::infinity();
    if (exponent == 0) return sign * std::ldexp(mantissa, -24);  // subnormal (or zero): mantissa · 2^-24
    return sign * std::ldexp(1024 + mantissa, exponent - 25);    // (1 + m/1024) · 2^(e − 15)
}

double widen_scalar(const unsigned char* p, ScalarKind kind, bool big_endian) {
    unsigned char b[8];
    const std::size_t size = scalar_bytes(kind);
    std::copy(p, p + size, b);
    if (big_endian) std::reverse(b, b + size);  // to the little-endian order of this machine
    switch (kind) {
        case ScalarKind::f64: { double x; std::memcpy(&x, b, 8); return x; }
        case ScalarKind::f32: { float x; std::memcpy(&x, b, 4); return x; }
        case ScalarKind::i32: { std::int32_t x; std::memcpy(&x, b, 4); return x; }
        case ScalarKind::i64: { std::int64_t x; std::memcpy(&x, b, 8); return static_cast<double>(x); }
        case ScalarKind::f16: return half_to_double(static_cast<std::uint16_t>(b[0] | (b[1] << 8)));
        case ScalarKind::bf16: {  // the upper half of an f32
            const std::uint32_t bits = static_cast<std::uint32_t>(b[0] | (b[1] << 8)) << 16;
            float x;
            std::memcpy(&x, &bits, 4);
            return x;
        }
    }
    return 0;
}

}  // namespace attn_trace
