#pragma once
// The CPU's fused attention kernel (docs/PERFORMANCE.md#design-and-why), private to the
// CPU backend (CpuBackend::fused_attention is the way in): the tiled online-softmax
// algorithm of docs/COMMANDS.md#tiled without the printing. Queries go in blocks of Br
// rows, keys in tiles of Bc; per query row it keeps the running max m, the running sum ℓ
// and the running weighted sum u, so it holds one panel's scores per worker (Bc × 16
// floats) and never the n × m matrix.
// Block products are register-tiled micro-kernels on packed panels
// (src/backend/cpu/panel_kernels-inl.hpp); the (head, query block) pairs are shared
// out among worker threads. float32 and float64.
#include <cstddef>
#include <optional>
#include <vector>

#include "attn_trace/backend.hpp"

namespace attn_trace {

// One sequence, all heads, as strided row-major views: row i of query head h
// starts at q + i·q_stride + h·d_k; query head h reads KV head h / (H / H_kv)
// (GQA). The kernel computes in T and reads the inputs as Source: the pipeline
// hands it the problem's double matrices for float32 too (each value is rounded
// to float as it is packed, as the trace's f32 rounds it), so it never makes a
// float copy of them.
template <typename T, typename Source = T>
struct FastAttentionInput {
    const Source* q = nullptr;  // (n, ≥ H·d_k)
    const Source* k = nullptr;  // (m, ≥ H_kv·d_k)
    const Source* v = nullptr;  // (m, ≥ H_kv·d_v)
    std::size_t q_stride = 0, k_stride = 0, v_stride = 0;
    std::size_t n = 0, m = 0, d_k = 0, d_v = 0;
    int heads = 1, kv_heads = 1;
    double scale = 1.0;             // s of Z = s·Q Kᵀ + M
    std::optional<double> softcap;  // c: Z = c·tanh(s·Q Kᵀ / c) + M
    const KeyMask* mask = nullptr; // null = every key visible
};

template <typename T>
struct FastAttentionOutput {
    T* out = nullptr;            // (n, H·d_v): head h in columns h·d_v … (the concat step of docs/COMMANDS.md#run)
    T* row_max = nullptr;        // (H, n) the final m of each row (−∞ when it read no key); may be null
    T* row_sum = nullptr;        // (H, n) the final ℓ = Σ_j e^(z_ij − m_i); may be null
    T empty_row_value = 0;       // out of a row that reads no key: 0 or NaN (the empty-row policy)
};

struct FastAttentionSettings {
    // Per panel of 16 queries the scores are Bc × 16 floats (16 KiB at Bc = 256,
    // in L1) and a packed K and V tile (Bc × 64 floats each at d_k = 64) stays in
    // L2. Br shrinks for short sequences so that every worker gets two blocks or more.
    // See docs/PERFORMANCE.md for the measurements.
    std::size_t block_q = 256;  // Br
    std::size_t block_k = 256;  // Bc
    int threads = 1;
};

// out_h = softmax(s·Q_h K_gᵀ + M) V_g for every query head h, written to `output`,
// by the micro-kernels of the target kernel_target.hpp chose for this CPU.
AttentionStats fast_attention(const FastAttentionInput<float>& input, const FastAttentionOutput<float>& output, const FastAttentionSettings& settings);
AttentionStats fast_attention(const FastAttentionInput<float, double>& input, const FastAttentionOutput<float>& output,
                              const FastAttentionSettings& settings);
AttentionStats fast_attention(const FastAttentionInput<double>& input, const FastAttentionOutput<double>& output, const FastAttentionSettings& settings);

}  // namespace attn_trace
