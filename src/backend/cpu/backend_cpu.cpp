#include "backend_cpu.hpp"

namespace attn_trace {

namespace {

// c_ij = Σ_t a_it · b(t, j), with b read through `at` so one loop serves B and Bᵀ.
// Accumulates in T: float for f32 and the half types (as float32 libraries do, and as
// half-precision matmuls accumulate), double for f64; a half type then rounds each sum once.
template <typename T, typename ReadB>
Matrix product(const Matrix& a, std::size_t columns, std::size_t inner, ReadB at) {
    Matrix c(a.rows(), columns);
    for (std::size_t i = 0; i < a.rows(); ++i)
        for (std::size_t j = 0; j < columns; ++j) {
            T sum = 0;
            for (std::size_t t = 0; t < inner; ++t) sum += static_cast<T>(a(i, t)) * static_cast<T>(at(t, j));
            c(i, j) = static_cast<double>(sum);
        }
    return c;
}

}  // namespace

Matrix CpuBackend::multiply(const Matrix& a, const Matrix& b, Dtype dtype) const {
    auto at = [&](std::size_t t, std::size_t j) { return b(t, j); };
    return rounded(compute_dtype(dtype) == Dtype::f32 ? product<float>(a, b.cols(), a.cols(), at) : product<double>(a, b.cols(), a.cols(), at), dtype);
}

Matrix CpuBackend::multiply_transposed(const Matrix& a, const Matrix& b, Dtype dtype) const {
    auto at = [&](std::size_t t, std::size_t j) { return b(j, t); };
    return rounded(compute_dtype(dtype) == Dtype::f32 ? product<float>(a, b.rows(), a.cols(), at) : product<double>(a, b.rows(), a.cols(), at), dtype);
}

}  // namespace attn_trace
