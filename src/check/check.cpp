#include "attn_trace/check.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/tolerances.hpp"

namespace attn_trace {

namespace {

StepCheck compare_step(const Trace& trace, const std::string& name, std::optional<int> head, std::optional<int> batch,
                       std::optional<int> t, std::optional<std::array<int, 2>> tile, const Matrix& want, Tolerance tolerance) {
    StepCheck check;
    check.label = step_label(name, head, batch, t, tile);
    check.tolerance = tolerance;
    check.expected_rows = want.rows();
    check.expected_cols = want.cols();
    const Step* step = trace.find(name, head, batch, t, tile);
    if (!step) {
        check.found = false;
        return check;
    }
    check.got_rows = step->values.rows();
    check.got_cols = step->values.cols();
    check.comparison = compare_matrices(step->values, want, tolerance);
    return check;
}

}  // namespace

bool CheckResult::passed() const {
    return !steps.empty() && std::all_of(steps.begin(), steps.end(), [](const StepCheck& s) { return s.passed(); });
}

std::string pipeline_for(const std::vector<Expectation>& expect) {
    const bool decode = std::any_of(expect.begin(), expect.end(), [](const Expectation& e) { return e.t.has_value(); });
    const bool tiled = std::any_of(expect.begin(), expect.end(), [](const Expectation& e) { return e.tile.has_value(); });
    if (decode && tiled) throw InputError("expect mixes decode steps (with \"t\") and tiled steps (with \"tile\"): put them in two files");
    const bool grad = std::any_of(expect.begin(), expect.end(), [](const Expectation& e) { return e.name.rfind("grad_", 0) == 0; });
    if (grad && (decode || tiled)) throw InputError("expect mixes gradients (grad_…) with decode or tiled steps: put them in two files");
    return grad ? "grad" : decode ? "decode" : tiled ? "tiled" : "run";
}

CheckResult check_expectations(const Problem& problem, const CheckOptions& options) {
    if (problem.expect.empty())
        throw JsonPathError(problem.file, "$.expect", "nothing to check: the file has no expect entries (or use ⟦golden⟧ TRACE)");
    CheckResult result;
    result.command = pipeline_for(problem.expect);
    const Trace trace = compute_trace(result.command, problem, options.run, options.decode, options.tiled);
    for (const auto& e : problem.expect) {
        const Tolerance tolerance{options.atol.value_or(e.atol), options.rtol.value_or(e.rtol)};
        result.steps.push_back(compare_step(trace, e.name, e.head, e.batch, e.t, e.tile, e.data, tolerance));
    }
    return result;
}

CheckResult check_golden(const Problem& problem, const Trace& golden, const CheckOptions& options) {
    CheckResult result;
    result.command = golden.command;
    RunOptions run = options.run;
    run.dtype = parse_dtype(golden.problem.dtype, "the golden trace's $.problem.dtype");  // recompute as the golden was computed
    const Trace trace = compute_trace(golden.command, problem, run, options.decode, options.tiled);
    const Tolerance tolerance{options.atol.value_or(tolerances::golden_f64.atol), options.rtol.value_or(tolerances::golden_f64.rtol)};
    for (const auto& step : golden.steps)
        result.steps.push_back(compare_step(trace, step.name, step.head, step.batch, step.t, step.tile, step.values, tolerance));
    return result;
}

}  // namespace attn_trace
