#include "attn_trace/compare.hpp"

#include <cmath>

namespace attn_trace {

bool values_match(double got, double want, Tolerance tolerance) {
    if (std::isnan(want)) return std::isnan(got);
    if (std::isnan(got)) return false;
    if (std::isinf(want) || std::isinf(got)) return got == want;
    return std::fabs(got - want) <= tolerance.atol + tolerance.rtol * std::fabs(want);
}

Comparison compare_matrices(const Matrix& got, const Matrix& want, Tolerance tolerance) {
    Comparison result;
    if (got.rows() != want.rows() || got.cols() != want.cols()) {
        result.shape_matches = false;
        return result;
    }
    for (std::size_t i = 0; i < want.rows(); ++i)
        for (std::size_t j = 0; j < want.cols(); ++j) {
            const double g = got(i, j), w = want(i, j);
            ++result.compared;
            if (std::isfinite(g) && std::isfinite(w) && std::fabs(g - w) > result.max_error) {
                result.max_error = std::fabs(g - w);
                result.worst_row = i;
                result.worst_col = j;
            }
            if (values_match(g, w, tolerance)) continue;
            ++result.failed;
            if (result.first_mismatches.size() < 10) result.first_mismatches.push_back({i, j, w, g});
        }
    return result;
}

}  // namespace attn_trace
