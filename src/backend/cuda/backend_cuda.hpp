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
    // CPU twin: CpuBackend::multiply
    Matrix multiply(const Matrix& a, const Matrix& b, Dtype dtype) const override;
    // CPU twin: CpuBackend::multiply_transposed
    Matrix multiply_transposed(const Matrix& a, const Matrix& b, Dtype dtype) const override;
    // One thread per query row, K and V tiles in shared memory, online softmax.
    // CPU twin: pipeline_tiled / fast_attention. Head widths up to 128.
    std::optional<Matrix> fused_attention(const Matrix& q, const Matrix& k, const Matrix& v, double scale, long causal_offset) const override;
};

// Whether a CUDA device can be used; when not, `why` says what is missing.
bool cuda_device_available(std::string& why);

}  // namespace attn_trace
