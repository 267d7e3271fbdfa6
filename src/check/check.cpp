#include "attn_trace/check.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/tolerances.hpp"

namespace attn_trace {

namespace {

StepCheck compare_step(const Trace& trace, StepName name, std::optional<int> head, std::optional<int> batch,
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

namespace {

// What grad keeps only with --tiled: lse, delta and the tiles.
bool tiled_backward_step(const Expectation& e) { return e.name == StepName::lse || e.name == StepName::delta || (is_grad_step(e.name) && e.tile); }

}  // namespace

std::string pipeline_for(const std::vector<Expectation>& expect) {
    const bool grad = std::any_of(expect.begin(), expect.end(), [](const Expectation& e) { return is_grad_step(e.name); });
    const bool decode = std::any_of(expect.begin(), expect.end(), [](const Expectation& e) { return e.t.has_value(); });
    const bool tiled = std::any_of(expect.begin(), expect.end(), [](const Expectation& e) { return e.tile.has_value() && !is_grad_step(e.name); });
    if (decode && tiled) throw InputError("expect mixes decode steps (with \"t\") and tiled steps (with \"tile\"): put them in two files");
    if (grad && (decode || tiled)) throw InputError("expect mixes gradients (grad_…) with decode or tiled forward steps: put them in two files");
    return grad ? "grad" : decode ? "decode" : tiled ? "tiled" : "run";
}

GradOptions grad_options_for(const std::vector<Expectation>& expect, const TiledOptions& tiles) {
    GradOptions grad;
    for (const auto& e : expect) {
        if (!e.row) continue;
        if (grad.row && *grad.row != *e.row)
            throw InputError(fmt::format("{}: jacobian entries of rows {} and {}: grad traces one row's Jacobian, put them in two files", e.json_path,
                                         *grad.row, *e.row));
        grad.row = e.row;
    }
    if (std::any_of(expect.begin(), expect.end(), tiled_backward_step)) grad.tiled = tiles;
    return grad;
}

CheckResult check_expectations(const Problem& problem, const CheckOptions& options) {
    if (problem.expect.empty())
        throw JsonPathError(problem.file, "$.expect", "nothing to check: the file has no expect entries (or use ⟦golden⟧ TRACE)");
    CheckResult result;
    result.command = pipeline_for(problem.expect);
    const Trace trace = compute_trace(result.command, problem, options.run, options.decode, options.tiled, grad_options_for(problem.expect, options.tiled));
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
    std::vector<Expectation> asked;  // the golden's steps, to pick grad's options as a file's expect entries do
    for (const auto& step : golden.steps) asked.push_back({step.name, step.head, step.batch, step.t, step.tile, std::nullopt, {}, 0, 0, ""});
    GradOptions grad = grad_options_for(asked, options.tiled);
    for (const auto& [key, value] : golden.numbers)
        if (key == "jacobian_row") grad.row = static_cast<std::size_t>(value);
    const Trace trace = compute_trace(golden.command, problem, run, options.decode, options.tiled, grad);
    const Tolerance tolerance{options.atol.value_or(tolerances::golden_f64.atol), options.rtol.value_or(tolerances::golden_f64.rtol)};
    for (const auto& step : golden.steps)
        result.steps.push_back(compare_step(trace, step.name, step.head, step.batch, step.t, step.tile, step.values, tolerance));
    return result;
}

}  // namespace attn_trace
