#pragma once
#include "attn_trace/backend.hpp"

namespace attn_trace {

// Plain loops, never optimised: the reference every other path is checked against.
class CpuBackend : public Backend {
public:
    std::string name() const override { return "cpu"; }
    Matrix multiply(const Matrix& a, const Matrix& b, Dtype dtype) const override;
    Matrix multiply_transposed(const Matrix& a, const Matrix& b, Dtype dtype) const override;
};

}  // namespace attn_trace
