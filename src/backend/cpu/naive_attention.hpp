#pragma once
// bench's baseline: attention the way a straightforward program computes it. The
// rows are split into one block per thread; per block and head, its (rows, m)
// scores s·Q Kᵀ in one BLAS call, the softmax over each full row, then P V in a
// second call. All blocks together hold n × m scores, which is what the fast path
// avoids. It writes `out` only (row_max and row_sum are left alone).
#include "fast_attention.hpp"

namespace attn_trace {

// Masks by key range and key_valid only (causal, window, `lengths`, padding: what
// bench uses); throws std::invalid_argument for softcap, ALiBi or dense masks, and
// for n = 0 or m = 0.
// Needs OpenBLAS (opened on first use; BackendUnavailable when it cannot be).
template <typename T>
AttentionStats naive_attention(const FastAttentionInput<T>& input, const FastAttentionOutput<T>& output, int threads);

extern template AttentionStats naive_attention<float>(const FastAttentionInput<float>&, const FastAttentionOutput<float>&, int);
extern template AttentionStats naive_attention<double>(const FastAttentionInput<double>&, const FastAttentionOutput<double>&, int);

}  // namespace attn_trace
