#pragma once
// The two row loops of the online softmax, the part of the fast path that BLAS
// does not do: max_j z_j, and z_j ← e^(z_j − shift) with Σ_j. They are half the
// kernel's time in plain C++: GCC 12 vectorises neither (a float max reduction
// needs -ffinite-math-only, which would let it assume there is no −∞ and break
// the masking; expf is a library call). So float has an AVX2 version, used when
// the kernel is compiled for a CPU with AVX2 and FMA (ATTN_TRACE_NATIVE), and
// everything has the plain version, which is also the reference for the tests.
// Only for the kernel file: it is compiled with -march=native, the rest is not.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace attn_trace::softmax_rows {

// max_j z_j over cols values (−∞ when cols = 0).
template <typename T>
T row_maximum(const T* z, std::size_t cols) {
    T result = -std::numeric_limits<T>::infinity();
    for (std::size_t j = 0; j < cols; ++j) result = std::max(result, z[j]);
    return result;
}

// z_j ← e^(z_j − shift) in place (−∞ becomes exactly 0); returns Σ_j e^(z_j − shift).
template <typename T>
T exp_shifted_and_sum(T* z, std::size_t cols, T shift) {
    T sum = 0;
    for (std::size_t j = 0; j < cols; ++j) {
        z[j] = std::exp(z[j] - shift);
        sum += z[j];
    }
    return sum;
}

#if defined(__AVX2__) && defined(__FMA__)

// Eight e^x for x ≤ 0 (every exponent here is a score minus its row's max), after
// Cephes' expf: x = k·ln 2 + r with |r| ≤ ln 2 / 2, e^r by a degree-7 polynomial,
// 2^k through the exponent bits; about 1 ulp. Below −87.3 (where e^x leaves the
// normal floats) and at −∞ (a masked key) the result is exactly 0.
inline __m256 exp_nonpositive(__m256 x) {
    const __m256 lowest = _mm256_set1_ps(-87.3f);
    const __m256 clamped = _mm256_max_ps(x, lowest);
    const __m256 k = _mm256_round_ps(_mm256_mul_ps(clamped, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    // r = x − k·ln 2, with ln 2 in two parts so that r keeps its low bits
    __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), clamped);
    r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    // e^r ≈ 1 + r + r²·p(r)
    const __m256 e_r = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
    const __m256i exponent = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
    const __m256 result = _mm256_mul_ps(e_r, _mm256_castsi256_ps(exponent));
    return _mm256_andnot_ps(_mm256_cmp_ps(x, lowest, _CMP_LT_OQ), result);
}

inline float horizontal_max(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

inline float horizontal_sum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

template <>
inline float row_maximum<float>(const float* z, std::size_t cols) {
    __m256 acc = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    std::size_t j = 0;
    for (; j + 8 <= cols; j += 8) acc = _mm256_max_ps(acc, _mm256_loadu_ps(z + j));
    float result = horizontal_max(acc);
    for (; j < cols; ++j) result = std::max(result, z[j]);
    return result;
}

template <>
inline float exp_shifted_and_sum<float>(float* z, std::size_t cols, float shift) {
    const __m256 shift8 = _mm256_set1_ps(shift);
    __m256 acc = _mm256_setzero_ps();
    std::size_t j = 0;
    for (; j + 8 <= cols; j += 8) {
        const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(z + j), shift8));
        _mm256_storeu_ps(z + j, e);
        acc = _mm256_add_ps(acc, e);
    }
    float sum = horizontal_sum(acc);
    for (; j < cols; ++j) {
        z[j] = std::exp(z[j] - shift);
        sum += z[j];
    }
    return sum;
}

#endif

}  // namespace attn_trace::softmax_rows
