#pragma once
// The online softmax's update of one query row by a tile of its scores z_j (the
// `m`, `rescale` and `l` steps of docs/COMMANDS.md#tiled), written once:
//
//   m' = max(m, max_j z_j)
//   r  = e^(m − m')                   exactly 1 where the max did not move
//   p_j = e^(z_j − m')                exactly 0 for a blocked key (z_j = −∞)
//   ℓ' = r·ℓ + Σ_j p_j,   u' = r·u + Σ_j p_j v_j
//
// A row that has read no visible key yet has m = m' = −∞, where e^(−∞ − (−∞)) would
// be NaN: there r = 1 and every p_j = 0, so ℓ and u stay exactly 0 and the row is
// empty, not NaN (the empty-row policy, docs/PROBLEM.md#scale-softcap-empty-rows,
// decides its out).
//
// Called by every scalar path: the tiled pipeline, the tensor-core kernel's CPU
// emulation and both CUDA kernels (hence C++17 and __host__ __device__). The CPU fast
// path's SIMD kernel (src/backend/cpu/block_worker-inl.hpp) works lane by lane in base
// 2 and cannot call it; tests/test_online_softmax.cpp holds that kernel to this
// definition, the −∞ rows included.
#include <cmath>

#include "attn_trace/host_device.hpp"

namespace attn_trace::online_softmax {

// m' = max(m, z); a NaN z leaves m as it was (as std::max(m, z) and fmaxf do).
template <typename T>
ATTN_TRACE_HOST_DEVICE constexpr T raised_max(T m, T z) {
    return m < z ? z : m;
}

// r = e^(m_old − m_new), the factor ℓ and u are scaled by when the max rises.
template <typename T>
ATTN_TRACE_HOST_DEVICE inline T rescale(T m_old, T m_new) {
    return m_old == m_new ? T(1) : std::exp(m_old - m_new);
}

// p = e^(z − m_new), the weight of a key whose score is z.
template <typename T>
ATTN_TRACE_HOST_DEVICE inline T weight(T z, T m_new) {
    return z == -INFINITY ? T(0) : std::exp(z - m_new);
}

// ℓ' = r·ℓ + Σ p (and entry by entry u' = r·u + Σ p v): what was summed under the
// old max, rescaled to the new one, plus this tile's part.
template <typename T>
ATTN_TRACE_HOST_DEVICE constexpr T rescaled_sum(T sum, T rescale, T added) {
    return rescale * sum + added;
}

}  // namespace attn_trace::online_softmax
