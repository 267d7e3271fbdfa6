#include "attn_trace/matrix.hpp"

#include <fmt/format.h>

namespace attn_trace {

Matrix Matrix::columns(std::size_t first, std::size_t count) const {
    Matrix out(rows_, count);
    for (std::size_t i = 0; i < rows_; ++i)
        for (std::size_t j = 0; j < count; ++j) out(i, j) = (*this)(i, first + j);
    return out;
}

Matrix Matrix::transposed() const {
    Matrix out(cols_, rows_);
    for (std::size_t i = 0; i < rows_; ++i)
        for (std::size_t j = 0; j < cols_; ++j) out(j, i) = (*this)(i, j);
    return out;
}

std::string shape_string(std::size_t rows, std::size_t cols) {
    return fmt::format("({}, {})", rows, cols);
}

Matrix rounded(Matrix m, Dtype dtype) {
    if (dtype != Dtype::f64)
        for (auto& x : m.data()) x = round_to(dtype, x);
    return m;
}

}  // namespace attn_trace
