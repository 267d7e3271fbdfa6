#pragma once
// The CPU's decode kernel (docs/PERFORMANCE.md#decode-one-query-over-a-kv-cache), private to
// the CPU backend (CpuBackend::decode_attention is the way in): one decode step, one new
// query per query head against a cache of T keys and values, split-K ("flash-decoding").
// A step does 4·T·d flops per query head on 2·T·d cached values per KV head, so it is
// bound by memory, not by multiply-adds: the kernel's one aim is to read each cached key
// and value once. The cache is cut into chunks along T, and each (KV head, chunk) item
// scores all G = H / H_kv query heads of that KV head's group against each key it reads;
// per query it keeps the running max, sum and weighted sum (online softmax), and a last
// pass merges the chunks' partial softmaxes.
#include <cstddef>

#include "fast_attention.hpp"

namespace attn_trace {

// The input is the forward kernel's (fast_attention.hpp) with n = 1: q holds one row of
// H·d_k values, k and v the cache of m = T ≥ 1 rows; query head h reads KV head h / (H / H_kv).
// Its mask and softcap must be unset (CpuBackend::supports refuses such calls).
struct DecodeSettings {
    int threads = 1;
    std::size_t chunk = 0;  // keys per chunk; 0 = chosen from T, H_kv and the threads
};

// out (H·d_v) = softmax(s·q_h K_gᵀ) V_g for every query head h; the stats name the
// workers and the chunk (block_k) used.
AttentionStats decode_attention(const FastAttentionInput<float>& input, float* out, const DecodeSettings& settings);
AttentionStats decode_attention(const FastAttentionInput<double>& input, double* out, const DecodeSettings& settings);

}  // namespace attn_trace
