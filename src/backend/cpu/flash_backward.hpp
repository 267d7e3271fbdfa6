#pragma once
// The CPU's fused attention backward (docs/COMMANDS.md#grad, `grad --fast`):
// FlashAttention-2's, private to the CPU backend (CpuBackend::fused_attention_backward
// is the way in). It runs the fast forward kernel first, keeps lse = m + ln ℓ per row,
// and then recomputes every (Br, Bc) tile's weights from lse, never holding (n, m).
#include <cstddef>

#include "fast_attention.hpp"

namespace attn_trace {

template <typename T>
struct FlashBackwardOutput {
    T* out = nullptr;     // (n, H·d_v): the forward's output (the concat step)
    T* lse = nullptr;     // (H, n): m + ln ℓ in natural units, −∞ for a row that reads no key
    T* delta = nullptr;   // (H, n): rowsum(d_out ⊙ out)
    T* grad_q = nullptr;  // (n, H·d_k)
    T* grad_k = nullptr;  // (m, H_kv·d_k): summed over the query heads of each KV head
    T* grad_v = nullptr;  // (m, H_kv·d_v)
};

struct FlashBackwardSettings {
    // Br and Bc: 64 × 64 tiles keep the packed K, V, their transposes, the dK and dV
    // sums and the tile's P and dS (about 150 KiB at d = 64) in L2; see
    // docs/PERFORMANCE.md#the-backward-pass for the measurements.
    std::size_t block_q = 64, block_k = 64;
    int threads = 1;
};

// The gradients of L = Σ d_out ⊙ out for every head at once. d_out is (n, H·d_v) with
// rows d_out_stride apart. Masks: row key ranges only (causal, window, lengths);
// CpuBackend::supports says so for the rest. Work is shared out by key tile, one KV
// head after another: each worker owns its tile's dK and dV rows, and sums dQ in a
// buffer of its own, added up after each KV head, so no two workers write one value.
AttentionStats flash_backward(const FastAttentionInput<float, double>& input, const double* d_out, std::size_t d_out_stride,
                              const FlashBackwardOutput<float>& output, const FlashBackwardSettings& settings);
AttentionStats flash_backward(const FastAttentionInput<double>& input, const double* d_out, std::size_t d_out_stride,
                              const FlashBackwardOutput<double>& output, const FlashBackwardSettings& settings);

}  // namespace attn_trace
