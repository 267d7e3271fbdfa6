#pragma once
// The arithmetic of the backward pass (pipeline_grad.cpp) that is not a step of its own:
// element-wise products, sums rounded in the arithmetic type, and the upstream gradient.
//
// A gradient that is a sum of products (a KV head's over its query heads, a tiled
// gradient's over key tiles, a weight's over the sequences of a batch, grad_x's over
// q, k and v) is computed as one step (docs/PROBLEM.md#dtype-half-precision): from
// the stored operands, every product and sum in the arithmetic type `compute` (f32 for
// a half type), and rounded to the run's type once, when the step is stored. So these
// take compute_dtype(dtype) and never round to a half type.
#include <cstddef>
#include <string>
#include <vector>

#include "attn_trace/dtype.hpp"
#include "attn_trace/matrix.hpp"
#include "attn_trace/problem.hpp"

namespace attn_trace {

// Element-wise a ⊙ b.
Matrix hadamard(const Matrix& a, const Matrix& b);

// The column sums of a (rows, cols) as a (1, cols) row: a bias's gradient.
Matrix column_sums(const Matrix& a, Dtype compute);

// into += a (into = a when into is empty).
void add_into(Matrix& into, const Matrix& a, Dtype compute);

// a's columns written over into's, from column `first`.
void put_columns(Matrix& into, const Matrix& a, std::size_t first);

// --d-out ones | random:SEED, else the problem's d_out, else ones: one (n, width) per sequence.
std::vector<Matrix> upstream(const Problem& p, const std::string& option, std::size_t width);

}  // namespace attn_trace
