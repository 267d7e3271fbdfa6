#pragma once
// A dense row-major matrix of doubles: the one container every step uses.
// float32 runs keep float32 values in it (every float is exactly a double), so one
// type serves both dtypes and the trace never needs to know which was used.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "attn_trace/dtype.hpp"

namespace attn_trace {

class Matrix {
public:
    Matrix() = default;
    Matrix(std::size_t rows, std::size_t cols, double fill = 0.0)
        : rows_(rows), cols_(cols), data_(rows * cols, fill) {}
    // Takes `values` (rows · cols of them, row-major) over without copying: a
    // loaded n = 65 536 matrix must not exist twice.
    Matrix(std::size_t rows, std::size_t cols, std::vector<double>&& values) : rows_(rows), cols_(cols), data_(std::move(values)) {}

    std::size_t rows() const { return rows_; }
    std::size_t cols() const { return cols_; }
    bool empty() const { return rows_ == 0 || cols_ == 0; }

    double& operator()(std::size_t i, std::size_t j) { return data_[i * cols_ + j]; }
    double operator()(std::size_t i, std::size_t j) const { return data_[i * cols_ + j]; }
    double* row(std::size_t i) { return data_.data() + i * cols_; }
    const double* row(std::size_t i) const { return data_.data() + i * cols_; }
    std::vector<double>& data() { return data_; }
    const std::vector<double>& data() const { return data_; }

    // Columns first .. first+count-1 as a new matrix (a head's slice of Q, K or V).
    Matrix columns(std::size_t first, std::size_t count) const;
    Matrix transposed() const;

private:
    std::size_t rows_ = 0;
    std::size_t cols_ = 0;
    std::vector<double> data_;
};

// "(3, 4)": the way shapes are written everywhere in messages and traces.
std::string shape_string(std::size_t rows, std::size_t cols);
inline std::string shape_string(const Matrix& m) { return shape_string(m.rows(), m.cols()); }

// Every element as the dtype stores it (round_to).
Matrix rounded(Matrix m, Dtype dtype);

}  // namespace attn_trace
