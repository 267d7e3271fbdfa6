#pragma once
// One stored scalar widened to f64, exactly: every f16, bf16, f32 and i32 value,
// and every f64, is a double; an i64 beyond 2^53 is not (the caller refuses it).
#include <cstdint>
#include <cstring>

namespace attn_trace {

enum class ScalarKind { f64, f32, f16, bf16, i32, i64 };

inline std::size_t scalar_bytes(ScalarKind kind) {
    switch (kind) {
        case ScalarKind::f64: case ScalarKind::i64: return 8;
        case ScalarKind::f32: case ScalarKind::i32: return 4;
        default: return 2;
    }
}

// IEEE 754 binary16 → double. Hand-written because GCC 12 has no std::float16_t and
// the F16C instructions are not in baseline x86-64; every half is exact in a double.
double half_to_double(std::uint16_t bits);

// The scalar at p (unaligned), stored little-endian unless big_endian.
double widen_scalar(const unsigned char* p, ScalarKind kind, bool big_endian);

}  // namespace attn_trace
