#pragma once
#include "attn_trace/backend.hpp"

namespace attn_trace {

// The CPU backend. Its products are plain loops, never optimised: the reference
// every other path is checked against. Its attention operations are the fast
// path's tiled kernel (fast_attention.cpp), bench's BLAS baseline
// (naive_attention.cpp), the fused backward (flash_backward.cpp) and the decode
// kernel (decode_attention.cpp), all checked against those plain loops by the
// tests. It has no tensor-core attention (the tensor-core kernel's CPU emulation is its tests'
// twin, not an operation).
class CpuBackend : public Backend {
public:
    std::string name() const override { return "cpu"; }
    bool supports(Operation op, const AttentionCall* call, std::string& why) const override;
    Matrix multiply(const Matrix& a, const Matrix& b, Dtype dtype) const override;
    Matrix multiply_transposed(const Matrix& a, const Matrix& b, Dtype dtype) const override;
    AttentionResult fused_attention(const AttentionCall& call) const override;
    AttentionResult unfused_attention(const AttentionCall& call) const override;
    AttentionResult tensor_core_attention(const AttentionCall& call) const override;
    // FlashAttention-2's backward (flash_backward.cpp), its forward the fused kernel's.
    AttentionGradients fused_attention_backward(const AttentionCall& call, const Matrix& d_out) const override;
    // One decode step through decode_attention.cpp (flash-decoding).
    AttentionResult decode_attention(const AttentionCall& call) const override;
};

}  // namespace attn_trace
