#pragma once
// A backend is the small table of matrix operations the pipelines need. The CPU
// reference is the judge of every other backend; CUDA sits behind the same table.
#include <memory>
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
};

// "cpu" always; "cuda" when built with CUDA and a GPU is present.
// Throws BackendUnavailable (exit 3) otherwise, InputError for unknown names.
std::unique_ptr<Backend> make_backend(const std::string& name);

}  // namespace attn_trace
