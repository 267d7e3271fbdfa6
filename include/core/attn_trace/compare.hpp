#pragma once
// The one comparison function: used by `check`, the tests and every backend
// self-check. An element passes when |got − want| <= atol + rtol·|want|;
// −∞ matches only −∞ (and +∞ only +∞); NaN passes only where NaN was expected.
#include <cstddef>
#include <string>
#include <vector>

#include "attn_trace/matrix.hpp"

namespace attn_trace {

// No default: each use names its entry of tolerances.hpp, which says why.
struct Tolerance {
    double atol;
    double rtol;
};

struct Mismatch {
    std::size_t row = 0, col = 0;
    double want = 0, got = 0;
};

struct Comparison {
    bool shape_matches = true;
    std::size_t compared = 0, failed = 0;
    double max_error = 0;  // largest value_difference; ∞ where a non-finite value meets another value
    std::size_t worst_row = 0, worst_col = 0;
    double worst_want = 0, worst_got = 0;  // the pair at [worst_row, worst_col]
    std::vector<Mismatch> first_mismatches;  // at most 10, in row-major order
    bool passed() const { return shape_matches && failed == 0; }
};

bool values_match(double got, double want, Tolerance tolerance);
// |got − want|, where equal values (−∞ and −∞) and two NaNs differ by 0, and a
// NaN or an infinity against any other value by ∞: a mask that changed is an
// infinite difference, not a difference of 0.
double value_difference(double got, double want);
Comparison compare_matrices(const Matrix& got, const Matrix& want, Tolerance tolerance);

}  // namespace attn_trace
