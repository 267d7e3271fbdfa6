#pragma once
// The CUDA backend: the same operations as the CPU reference, on the GPU.
// This header is plain C++ (no CUDA headers), so the library's .cpp files can
// include it; the kernels live in backend_cuda.cu.
#include <string>

#include "attn_trace/backend.hpp"

namespace attn_trace {

class CudaBackend : public Backend {
public:
    std::string name() const override { return "cuda"; }
    // Products in either dtype; fused attention in float32 for head widths up to
    // 128, masks by key ranges (causal, window, `lengths`) only, no softcap; the
    // tensor-core attention for the calls tensor_cores::takes (tensor_core_tiling.hpp);
    // no unfused attention and no fused backward (the CPU's). None of these answers asks the device.
    bool supports(Operation op, const AttentionCall* call, std::string& why) const override;
    // CPU twin: CpuBackend::multiply
    Matrix multiply(const Matrix& a, const Matrix& b, Dtype dtype) const override;
    // CPU twin: CpuBackend::multiply_transposed
    Matrix multiply_transposed(const Matrix& a, const Matrix& b, Dtype dtype) const override;
    // One thread per query row, K and V tiles in shared memory, online softmax;
    // one launch per head. CPU twin: CpuBackend::fused_attention (fast_attention.cpp).
    AttentionResult fused_attention(const AttentionCall& call) const override;
    AttentionResult unfused_attention(const AttentionCall& call) const override;
    // The tensor-core kernel (backend_cuda_tensor_cores.cu, sm_80 and later): Q, K
    // and V rounded to call.half (fp16 or bf16), WMMA 16 × 16 × 16 products
    // accumulating in float32, the online softmax in float32, 64 query rows (4 warps)
    // per block against 64-key tiles, tiles outside a block's key ranges skipped, GQA;
    // d_k = d_v = 64 or 128, masks by key ranges only, no softcap. CPU twin:
    // emulate_tensor_core_attention. No command calls it yet: its tests do, through attend().
    AttentionResult tensor_core_attention(const AttentionCall& call) const override;
    // No fused backward yet: supports says so, and this is never reached through attend_backward.
    AttentionGradients fused_attention_backward(const AttentionCall& call, const Matrix& d_out) const override;
};

// Whether a CUDA device can be used; when not, `why` says what is missing.
bool cuda_device_available(std::string& why);

}  // namespace attn_trace
