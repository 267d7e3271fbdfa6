#pragma once
// A backend is the small table of matrix operations the pipelines need. The CPU
// reference is the judge of every other backend; CUDA sits behind the same table.
#include <memory>
#include <optional>
#include <string>

#include "attn_trace/matrix.hpp"
#include "attn_trace/problem.hpp"

namespace attn_trace {

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;
    // a (n, k) · b (k, m) -> (n, m), accumulated in the dtype.
    virtual Matrix multiply(const Matrix& a, const Matrix& b, Dtype dtype) const = 0;
    // a (n, d) · b (m, d)ᵀ -> (n, m): scores without materialising Kᵀ.
    virtual Matrix multiply_transposed(const Matrix& a, const Matrix& b, Dtype dtype) const = 0;
    // A fused kernel for one head in float32 (the GPU fast path of SPEC §13):
    // q (n, d), k (m, d), v (m, d_v) -> out (n, d_v), never holding the n×m scores.
    // causal_offset < 0: no mask; otherwise key j is visible to query i iff
    // j <= i + causal_offset. Rows with no visible key give 0. Backends without
    // such a kernel return nullopt (the CPU's fast path is fast_attention.hpp).
    virtual std::optional<Matrix> fused_attention(const Matrix&, const Matrix&, const Matrix&, double /*scale*/,
                                                  long /*causal_offset*/) const {
        return std::nullopt;
    }
};

// "cpu" always; "cuda" when built with CUDA and a GPU is present.
// Throws BackendUnavailable (exit 3) otherwise, InputError for unknown names.
std::unique_ptr<Backend> make_backend(const std::string& name);

}  // namespace attn_trace
