// Each step of a run in f32 or a half type against the same run in f64
// (docs/PROBLEM.md#dtype-half-precision): how far it is, and which cells it lost.
#include <cmath>

#include "attn_trace/compare.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/pipeline.hpp"

namespace attn_trace {

namespace {

bool same_place(const Step& a, const Step& b) {
    return a.name == b.name && a.head == b.head && a.batch == b.batch && a.t == b.t && a.tile == b.tile && a.label == b.label;
}

// The two runs record the same steps in the same order, so the step at the same index is
// the one; a search covers a trace whose steps differ (a step only one dtype records).
const Step* counterpart(const Trace& f64, std::size_t index, const Step& step) {
    if (index < f64.steps.size() && same_place(f64.steps[index], step)) return &f64.steps[index];
    for (const Step& candidate : f64.steps)
        if (same_place(candidate, step)) return &candidate;
    return nullptr;
}

std::optional<CellLoss> loss(double got, double want) {
    if (std::isinf(got) && std::isfinite(want)) return CellLoss::overflowed;
    if (got == 0 && want != 0 && std::isfinite(want)) return CellLoss::underflowed;
    return std::nullopt;
}

}  // namespace

void compare_with_f64(Trace& trace, const Trace& f64) {
    for (std::size_t index = 0; index < trace.steps.size(); ++index) {
        Step& step = trace.steps[index];
        const Step* reference = counterpart(f64, index, step);
        if (!reference || reference->values.rows() != step.values.rows() || reference->values.cols() != step.values.cols()) continue;
        double largest = 0;
        step.lost_cells.clear();
        step.overflowed_cells = step.underflowed_cells = 0;
        for (std::size_t i = 0; i < step.values.rows(); ++i)
            for (std::size_t j = 0; j < step.values.cols(); ++j) {
                const double got = step.values(i, j), want = reference->values(i, j);
                largest = std::max(largest, value_difference(got, want));
                const auto lost = loss(got, want);
                if (!lost) continue;
                ++(*lost == CellLoss::overflowed ? step.overflowed_cells : step.underflowed_cells);
                if (step.lost_cells.size() < lost_cells_kept) step.lost_cells.push_back({i, j, *lost});
            }
        step.max_abs_error_vs_f64 = largest;
    }
}

Trace traced_against_f64(const RunOptions& options, const std::function<Trace(const RunOptions&)>& pipeline) {
    Trace trace = pipeline(options);
    if (options.dtype == Dtype::f64) return trace;
    RunOptions exact = options;
    exact.dtype = Dtype::f64;
    try {
        compare_with_f64(trace, pipeline(exact));
    } catch (const InputError&) {
        // f64 refused what the dtype traced: the steps keep no error (docs/PROBLEM.md#dtype-half-precision).
    }
    return trace;
}

}  // namespace attn_trace
