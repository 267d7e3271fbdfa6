// `precision` (docs/COMMANDS.md#precision): the four types side by side, measured against f64.
#include "attn_trace/precision.hpp"

#include <cmath>

#include "attn_trace/compare.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/render.hpp"

namespace attn_trace {

namespace {

constexpr Dtype compared[] = {Dtype::f64, Dtype::f32, Dtype::f16, Dtype::bf16};

PrecisionStep measure_step(const Step& step, const Step& exact) {
    PrecisionStep out{shown_name(step), step.head, step.batch};
    for (std::size_t i = 0; i < step.values.rows(); ++i)
        for (std::size_t j = 0; j < step.values.cols(); ++j) {
            const double got = step.values(i, j), want = exact.values(i, j), error = value_difference(got, want);
            out.max_abs_error = std::max(out.max_abs_error, error);
            if (std::isfinite(want) && want != 0) out.max_rel_error = std::max(out.max_rel_error, error / std::fabs(want));
        }
    return out;
}

// An inf or NaN where f64 has a finite value: the mask's −∞ is in both and does not count.
bool gained_nonfinite(const Step& step, const Step& exact) {
    for (std::size_t k = 0; k < step.values.data().size(); ++k)
        if (!std::isfinite(step.values.data()[k]) && std::isfinite(exact.values.data()[k])) return true;
    return false;
}

}  // namespace

PrecisionReport measure_precision(const Problem& given, const PrecisionOptions& options) {
    Problem problem = given;
    problem.allow_nonfinite = true;  // every type's overflow is traced: it is what the comparison looks for
    std::vector<Trace> traces;
    for (Dtype dtype : compared) traces.push_back(pipeline_full(problem, RunOptions{dtype, options.backend, options.max_shift}));
    const Trace& exact = traces.front();
    PrecisionReport report{exact.problem.title, "", options.max_shift, {}};
    TraceSummary summary = exact.problem;
    summary.dtype = "f64, f32, f16 and bf16";
    report.problem_line = describe_problem(summary);
    for (std::size_t k = 0; k < traces.size(); ++k) {
        PrecisionRun run{compared[k], std::nullopt, std::nullopt, std::nullopt, {}};
        // The pipelines record the same steps in the same order in every type.
        for (std::size_t s = 0; s < exact.steps.size(); ++s) {
            const Step &step = traces[k].steps.at(s), &reference = exact.steps[s];
            run.steps.push_back(measure_step(step, reference));
            if (!run.first_nonfinite && gained_nonfinite(step, reference)) {
                run.first_nonfinite = shown_name(step);
                run.first_nonfinite_head = step.head;
                run.first_nonfinite_batch = step.batch;
            }
        }
        report.runs.push_back(std::move(run));
    }
    return report;
}

}  // namespace attn_trace
