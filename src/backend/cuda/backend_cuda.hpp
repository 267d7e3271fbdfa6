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
};

// Whether a CUDA device can be used; when not, `why` says what is missing.
bool cuda_device_available(std::string& why);

// The GPU fast path: fused attention for one head in float32, online softmax,
// never holding the n×m scores. CPU twin: pipeline_tiled / the fast CPU kernel.
// q (n, d), k (m, d), v (m, d_v) -> out (n, d_v). `causal_offset` < 0 means no
// mask; otherwise key j is visible to query i iff j <= i + causal_offset
// (0 = top-left, m − n = bottom-right). Rows with no visible key give 0.
Matrix cuda_fused_attention(const Matrix& q, const Matrix& k, const Matrix& v, double scale, long causal_offset);

}  // namespace attn_trace
