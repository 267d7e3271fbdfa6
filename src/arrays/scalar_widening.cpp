#include "scalar_widening.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attn_trace/half_float.hpp"

namespace attn_trace {

double half_to_double(std::uint16_t bits) { return static_cast<double>(f16_bits_to_f32(bits)); }

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
        case ScalarKind::bf16: return static_cast<double>(bf16_bits_to_f32(static_cast<std::uint16_t>(b[0] | (b[1] << 8))));
    }
    return 0;
}

}  // namespace attn_trace
