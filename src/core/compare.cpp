#include "attn_trace/compare.hpp"

#include <cmath>
#include <limits>

namespace attn_trace {

bool values_match(double got, double want, Tolerance tolerance) {
    if (std::isnan(want)) return std::isnan(got);
    if (std::isnan(got)) return false;
    if (std::isinf(want) || std::isinf(got)) return got == want;
    return std::fabs(got - want) <= tolerance.atol + tolerance.rtol * std::fabs(want);
}

double value_difference(double got, double want) {
    if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want) ? 0.0 : std::numeric_limits<double>::infinity();
    if (got == want) return 0.0;
    return std::fabs(got - want);  // ∞ when either is infinite
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
            if (const double difference = value_difference(g, w); difference > result.max_error) {
                result.max_error = difference;
                result.worst_row = i;
                result.worst_col = j;
                result.worst_want = w;
                result.worst_got = g;
            }
            if (values_match(g, w, tolerance)) continue;
            ++result.failed;
            if (result.first_mismatches.size() < 10) result.first_mismatches.push_back({i, j, w, g});
        }
    return result;
}

}  // namespace attn_trace
