#pragma once
// PyTorch's scaled_dot_product_attention on the fast path (docs/PYTHON.md#scaled_dot_product_attention):
// the fused kernel, never an L × S matrix of scores. The Python front lays its arrays out
// as below and hands them over without a copy.
#include <cstddef>
#include <string>

#include "attn_trace/dtype.hpp"

namespace attn_trace {

struct SdpaRequest {
    std::size_t batch = 1, heads = 1, kv_heads = 1, L = 0, S = 0, E = 0, Ev = 0;
    // Row-major: query (batch, heads, L, E), key (batch, kv_heads, S, E), value (batch, kv_heads, S, Ev).
    const double *query = nullptr, *key = nullptr, *value = nullptr;
    // An additive mask (mask_batch, mask_heads, L, S), each of the two 1 or the full count
    // (a mask that broadcasts over it); null for none. A boolean mask arrives as 0 and −∞.
    const double* mask = nullptr;
    std::size_t mask_batch = 1, mask_heads = 1;
    bool is_causal = false;  // query i reads keys j ≤ i (top-left, as PyTorch's)
    double scale = 1.0;
    Dtype dtype = Dtype::f32;  // f32 or f64: what the kernel computes in
    int threads = 0;           // 0: one per core
    std::string backend = "cpu";
};

// Writes (batch, heads, L, Ev) to `out`. Query head h reads KV head h / (heads / kv_heads).
// A row that can read no key is 0, as PyTorch 2.5 and later return it.
void sdpa_command(const SdpaRequest& request, double* out);

}  // namespace attn_trace
