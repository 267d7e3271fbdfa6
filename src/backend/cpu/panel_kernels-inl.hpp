// Included once per target by fast_attention.cpp (Highway's foreach_target.h
// re-includes that file with HWY_TARGET set to each target), hence no #pragma
// once but Highway's per-target include guard, and everything inside the target's
// namespace and its #pragma GCC target region (HWY_BEFORE_NAMESPACE).
#if defined(ATTN_TRACE_PANEL_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTN_TRACE_PANEL_KERNELS_INL_H_
#undef ATTN_TRACE_PANEL_KERNELS_INL_H_
#else
#define ATTN_TRACE_PANEL_KERNELS_INL_H_
#endif

// The inner loops of the fast path, on "panels": NR queries side by side, so that
// one SIMD register holds one key's score for several queries. Then the online
// softmax runs down the columns of a panel (max, exp and sum lane by lane, no
// horizontal reductions), and both block products are register-tiled MR × NR
// micro-kernels reading packed operands front to back.
//
// Why hand-written and not OpenBLAS: the fast path used cblas_sgemm per tile
// until the measurements in docs/PERFORMANCE.md showed a quarter of its time in
// OpenBLAS re-packing the same tiles call after call; with these kernels each K
// and V tile is packed once per KV head and the scores stay in the layout the
// softmax and the second product read (docs/PERFORMANCE.md has the figures).
//
// Written with GCC's vector extensions rather than intrinsics: one template for
// float and double, in vectors as wide as the target's registers: 64 bytes for
// AVX-512 (16 floats), 32 for AVX2 + FMA (8), 16 for the x86-64 baseline (SSE2,
// 4). Inside the target's region GCC compiles them to that target's instructions
// (vfmadd231ps, vbroadcastss on AVX2); the results differ between targets only by
// rounding (a fused multiply-add rounds once). docs/PERFORMANCE.md says why this
// and not Highway's own operations.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace attn_trace::HWY_NAMESPACE::panel {

// The target's vector register, in bytes: what Highway says the target holds
// (HWY_MAX_BYTES: 64 on every AVX-512 target, 32 on AVX2, 16 on SSE4 and EMU128), so that a
// target a later Highway adds (AVX3_ZEN4, AVX3_SPR, AVX10) gets its own width, not the
// narrowest. At least 16 (SCALAR's 8 holds no GCC vector of 4 floats), at most 64 (the
// widest x86 register; scalable targets are not built here).
inline constexpr std::size_t vector_bytes = HWY_MAX_BYTES < 16 ? 16 : HWY_MAX_BYTES > 64 ? 64 : HWY_MAX_BYTES;
static_assert(vector_bytes == HWY_MAX_BYTES || HWY_TARGET == HWY_SCALAR, "the panel kernels' vectors are the target's registers");

// A register of T, and one of integers as wide as T for its bit patterns (GCC ignores
// the attribute on a template's own T, hence one per type).
template <typename T>
struct VectorOf;
template <>
struct VectorOf<float> {
    typedef float type __attribute__((vector_size(vector_bytes)));
    typedef std::int32_t bits __attribute__((vector_size(vector_bytes)));
};
template <>
struct VectorOf<double> {
    typedef double type __attribute__((vector_size(vector_bytes)));
    typedef std::int64_t bits __attribute__((vector_size(vector_bytes)));
};

// The vector and what the kernels do with it.
template <typename T>
struct Simd {
    using Vec = typename VectorOf<T>::type;
    static constexpr std::size_t lanes = vector_bytes / sizeof(T);

    static Vec splat(T x) { return x - Vec{}; }  // x − 0 = x, folded into one broadcast
    static Vec load(const T* p) {
        Vec v;
        std::memcpy(&v, p, sizeof v);
        return v;
    }
    static void store(T* p, Vec v) { std::memcpy(p, &v, sizeof v); }
    static Vec max(Vec a, Vec b) { return a > b ? a : b; }
};

// Queries per panel (two vectors) and rows per micro-tile: 6 × 2 accumulators,
// 2 loaded vectors and 1 broadcast fill 15 of the 16 AVX2 (or SSE2) registers;
// AVX-512's 32 take 8 rows, so that d_v = 64 and a 256-key tile are whole groups
// (docs/PERFORMANCE.md#where-the-time-goes).
template <typename T>
constexpr std::size_t NR = 2 * Simd<T>::lanes;
constexpr std::size_t MR = vector_bytes == 64 ? 8 : 6;

// C (Rows × NR, rows NR apart) = [C +] Σ_p A[p] ⊗ B[p] over p < depth, where A[p]
// is Rows values, the r-th at a + p·a_step + r·r_step (A packed MR per step; or a matrix
// read in place, its rows or its columns) and B[p] is NR values (B packed NR per step).
template <typename T, bool Accumulate, std::size_t Rows = MR>
inline void micro_kernel(std::size_t depth, const T* __restrict a, const T* __restrict b, T* __restrict c, std::size_t a_step = MR,
                         std::size_t r_step = 1) {
    using S = Simd<T>;
    using Vec = typename S::Vec;
    constexpr std::size_t L = S::lanes;
    Vec acc[Rows][2];
#pragma GCC unroll 8
    for (std::size_t r = 0; r < Rows; ++r)
        for (std::size_t v = 0; v < 2; ++v) acc[r][v] = Accumulate ? S::load(c + r * NR<T> + v * L) : Vec{};
    for (std::size_t p = 0; p < depth; ++p) {
        const Vec b0 = S::load(b + p * NR<T>), b1 = S::load(b + p * NR<T> + L);
#pragma GCC unroll 8
        for (std::size_t r = 0; r < Rows; ++r) {
            const Vec ar = S::splat(a[p * a_step + r * r_step]);
            acc[r][0] += ar * b0;
            acc[r][1] += ar * b1;
        }
    }
#pragma GCC unroll 8
    for (std::size_t r = 0; r < Rows; ++r)
        for (std::size_t v = 0; v < 2; ++v) S::store(c + r * NR<T> + v * L, acc[r][v]);
}

// The same for a last group with rows < MR real rows (with MR = 6, d_v = 64 is 10
// groups of 6 and one of 4: computing its 2 zero rows would be 3 % more work).
template <typename T, bool Accumulate>
inline void micro_kernel_rows(std::size_t rows, std::size_t depth, const T* a, const T* b, T* c, std::size_t a_step = MR, std::size_t r_step = 1) {
    switch (rows) {
        case 1: return micro_kernel<T, Accumulate, 1>(depth, a, b, c, a_step, r_step);
        case 2: return micro_kernel<T, Accumulate, 2>(depth, a, b, c, a_step, r_step);
        case 3: return micro_kernel<T, Accumulate, 3>(depth, a, b, c, a_step, r_step);
        case 4: return micro_kernel<T, Accumulate, 4>(depth, a, b, c, a_step, r_step);
        case 5: return micro_kernel<T, Accumulate, 5>(depth, a, b, c, a_step, r_step);
        case 6: return micro_kernel<T, Accumulate, std::min<std::size_t>(6, MR)>(depth, a, b, c, a_step, r_step);
        case 7: return micro_kernel<T, Accumulate, std::min<std::size_t>(7, MR)>(depth, a, b, c, a_step, r_step);
        default: return micro_kernel<T, Accumulate>(depth, a, b, c, a_step, r_step);
    }
}

// 2^x lane by lane for x ≤ 64 (a score minus a running max, in base-2 units: at
// most 0, or a little above when the max is the one before this tile), exactly 0 at
// −∞ (a masked key) and below the smallest normal power (−126.5 for float, −1022.5
// for double). Both types by one scheme: x = k + f with k = round(x), |f| ≤ ½; 2^f by
// a polynomial (below, one per type), 2^k through the exponent bits. x is first
// raised to −bias (−127, −1023), where those bits come out all zero, so 2^k is
// exactly 0 there: one max instead of a compare and a mask.
template <typename T, typename Polynomial>
inline typename Simd<T>::Vec exp2_by_parts(typename Simd<T>::Vec x, Polynomial two_to_the_fraction) {
    using S = Simd<T>;
    using Vec = typename S::Vec;
    constexpr int mantissa_bits = std::numeric_limits<T>::digits - 1;  // 23, 52
    constexpr T bias = std::numeric_limits<T>::max_exponent - 1;       // 127, 1023
    x = S::max(x, S::splat(-bias));
    // Adding 1.5·2^mantissa_bits rounds to an integer k held in the low mantissa bits;
    // the + bias there makes those bits, shifted up, 2^k's bits.
    const Vec magic = S::splat(static_cast<T>(3ull << (mantissa_bits - 1)) + bias);
    const Vec shifted = x + magic;
    const Vec poly = two_to_the_fraction(x - (shifted - magic));
    typename VectorOf<T>::bits bits;
    std::memcpy(&bits, &shifted, sizeof bits);
    bits <<= mantissa_bits;
    Vec power;
    std::memcpy(&power, &bits, sizeof power);
    return poly * power;
}

// float: 2^f by a degree-6 polynomial (Chebyshev fit, relative error 1.8e-8, under
// float's rounding) in Estrin's form, whose short dependency chains let several
// vectors overlap.
inline Simd<float>::Vec exp2_bounded(Simd<float>::Vec x) {
    using S = Simd<float>;
    using Vec = S::Vec;
    return exp2_by_parts<float>(x, [](Vec f) {
        const Vec f2 = f * f;
        const Vec low = S::splat(1.0f) + S::splat(0.693147182f) * f + (S::splat(0.240226507f) + S::splat(0.0555032715f) * f) * f2;
        const Vec high = S::splat(0.00961802527f) + S::splat(0.00134004327f) * f + S::splat(0.000154697322f) * f2;
        return low + high * (f2 * f2);
    });
}

// double: 2^f by its Taylor series to degree 13 in Horner's form (the first term left
// out is 4e-18 at |f| = ½: the result is within an ulp or two of exp2, as the
// library's). It used to call std::exp2 lane by lane, which held float64 to half the
// speed of float32 (docs/PERFORMANCE.md).
inline Simd<double>::Vec exp2_bounded(Simd<double>::Vec x) {
    using S = Simd<double>;
    using Vec = S::Vec;
    return exp2_by_parts<double>(x, [](Vec f) {
        static constexpr double c[] = {1.0,
                                       0.69314718055994529,
                                       0.24022650695910072,
                                       0.055504108664821583,
                                       0.0096181291076284769,
                                       0.0013333558146428443,
                                       0.00015403530393381609,
                                       1.5252733804059841e-05,
                                       1.321548679014431e-06,
                                       1.01780860092397e-07,
                                       7.0549116208011234e-09,
                                       4.4455382718708116e-10,
                                       2.5678435993488206e-11,
                                       1.3691488853904128e-12};
        Vec poly = S::splat(c[13]);
        for (int n = 12; n >= 0; --n) poly = poly * f + S::splat(c[n]);
        return poly;
    });
}

// An uninitialised array of T on a 64-byte boundary: panel rows are 64 bytes,
// and a vector load that straddles two cache lines costs two.
template <typename T>
class AlignedArray {
public:
    explicit AlignedArray(std::size_t size)
        : data_(static_cast<T*>(::operator new(size * sizeof(T), std::align_val_t{64}))), size_(size) {}
    T* data() const { return data_.get(); }
    std::size_t size() const { return size_; }

private:
    struct Free {
        void operator()(T* p) const { ::operator delete(p, std::align_val_t{64}); }
    };
    std::unique_ptr<T[], Free> data_;
    std::size_t size_;
};

}  // namespace attn_trace::HWY_NAMESPACE::panel
HWY_AFTER_NAMESPACE();

#endif  // ATTN_TRACE_PANEL_KERNELS_INL_H_
