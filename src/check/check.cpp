#include "attn_trace/check.hpp"

#include <cmath>

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/problem_overrides.hpp"
#include "attn_trace/tolerances.hpp"

namespace attn_trace {

namespace {

// An entry's tolerance (docs/COMMANDS.md#check): --atol and --rtol over every entry; else
// the entry's own; else, with --decimals N, what a value written to N decimals is within of
// the computed one, ½·10⁻ᴺ (and a hair over, for the decimal's own binary rounding); else
// the default.
Tolerance entry_tolerance(const Expectation& e, const CheckOptions& options) {
    Tolerance base{e.atol, e.rtol};
    if (!e.own_tolerance && options.decimals) base = {0.5 * std::pow(10.0, -*options.decimals) * (1 + 1e-9), 0.0};
    return {options.atol.value_or(base.atol), options.rtol.value_or(base.rtol)};
}

StepCheck compare_step(const Trace& trace, StepName name, std::optional<int> head, std::optional<int> batch,
                       std::optional<int> t, std::optional<std::array<int, 2>> tile, const Matrix& want, Tolerance tolerance) {
    StepCheck check;
    check.label = step_label(name, head, batch, t, tile);
    check.tolerance = tolerance;
    check.expected_rows = want.rows();
    check.expected_cols = want.cols();
    const Step* step = trace.find(name, head, batch, t, tile);
    std::optional<Matrix> rows_of_t;
    if (!step && t && !tile) {
        // decode records `concat` and `final` once, every step's rows stacked
        // (docs/PROBLEM.md#expect-values-for-attn-trace-check): an entry with t is the rows
        // of the decode step ending at query t, as many as that step's `out` has.
        const Step* stacked = trace.find(name, head, batch, std::nullopt, std::nullopt);
        const Step* out = trace.find(StepName::out, 0, batch, t, std::nullopt);
        if (stacked && out && trace.command == "decode" && out->values.rows() <= static_cast<std::size_t>(*t) + 1) {
            const std::size_t count = out->values.rows(), first = static_cast<std::size_t>(*t) + 1 - count;
            rows_of_t = Matrix(count, stacked->values.cols());
            for (std::size_t r = 0; r < count; ++r)
                for (std::size_t c = 0; c < stacked->values.cols(); ++c) (*rows_of_t)(r, c) = stacked->values(first + r, c);
        }
    }
    if (!step && !rows_of_t) {
        check.found = false;
        return check;
    }
    const Matrix& got = step ? step->values : *rows_of_t;
    check.got_rows = got.rows();
    check.got_cols = got.cols();
    check.comparison = compare_matrices(got, want, tolerance);
    return check;
}

}  // namespace

bool CheckResult::passed() const {
    return !steps.empty() && std::all_of(steps.begin(), steps.end(), [](const StepCheck& s) { return s.passed(); });
}

namespace {

// What grad keeps only with --tiled: lse, delta and the tiles.
bool tiled_backward_step(const Expectation& e) { return e.name == StepName::lse || e.name == StepName::delta || (is_grad_step(e.name) && e.tile); }

// decode's and tiled's s · Q Kᵀ + M was called `scores` before it took run's name `masked`
// (docs/NOTATION.md#one-name-per-quantity): an old entry or golden step so named, with a t or
// a tile, reads as `masked`, and a note says how many did, so old files keep passing.
StepName current_name(StepName name, bool stepwise, std::size_t& renamed) {
    if (name != StepName::scores || !stepwise) return name;
    ++renamed;
    return StepName::masked;
}

void note_renamed(std::size_t renamed, const char* one, const char* many, std::vector<std::string>& notes) {
    if (renamed == 0) return;
    notes.push_back(fmt::format("{} {} named 'scores' with a t or a tile read as 'masked': decode and tiled call s · Q Kᵀ + M 'masked', as run does; "
                                "rename {} to keep this note away",
                                renamed, renamed == 1 ? one : many, renamed == 1 ? "it" : "them"));
}

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
    std::size_t renamed = 0;
    for (const auto& e : problem.expect) {
        const Tolerance tolerance = entry_tolerance(e, options);
        const StepName name = current_name(e.name, e.t || e.tile, renamed);
        result.steps.push_back(compare_step(trace, name, e.head, e.batch, e.t, e.tile, e.data, tolerance));
    }
    note_renamed(renamed, "expect entry", "expect entries", result.notes);
    return result;
}

namespace {

// The problem as the golden computed it: its recorded settings, then the command line's
// overrides, each said in a note (docs/COMMANDS.md#check). The golden's record lists a
// model's own masks first, as the problem has them: they stay the model's, and the rest
// replace the file's masks, as ⟦mask⟧ then replaces them.
Problem golden_problem(const Problem& problem, const TraceSummary& g, const ProblemOverrides& o, RunOptions& run, std::vector<std::string>& notes) {
    Problem p = problem;
    p.dtype = parse_dtype(g.dtype, "the golden trace's $.problem.dtype");  // recompute as the golden was computed
    if (g.recorded) {
        std::vector<MaskSpec> recorded = masks_from_spec(g.mask_spec, p.n, p.m, "the golden trace's $.problem.mask_spec");
        for (const MaskSpec& own : p.masks)
            if (own.origin == MaskOrigin::model && !recorded.empty() && recorded.front().given == own.given) recorded.erase(recorded.begin());
        replace_masks(p, std::move(recorded), MaskOrigin::file);
        p.scale = Scale{Scale::Kind::value, g.scale};
        p.empty_rows = parse_empty_rows(g.empty_rows, "the golden trace's $.problem.empty_rows");
        p.dropout.reset();
        if (g.dropout) p.dropout = Dropout{g.dropout->p, g.dropout->seed, g.dropout->train};
        notes.push_back(fmt::format("the golden's settings: mask {}, scale {}, empty_rows {}, dropout {}, dtype {}", g.mask, g.scale, g.empty_rows,
                                    g.dropout ? fmt::format("p = {} ({})", g.dropout->p, g.dropout->train ? "train" : "eval") : "none", g.dtype));
    } else {
        notes.push_back("the golden records no settings (it was written before they were recorded): the problem file's mask, scale, empty_rows and dropout apply");
    }
    apply_overrides(p, o);
    run.dtype = *p.dtype;
    if (o.mask) notes.push_back(fmt::format("⟦mask⟧ {} replaces the golden's mask {}", *o.mask, g.recorded ? g.mask : "(the file's)"));
    if (o.scale) notes.push_back(fmt::format("⟦scale⟧ {} replaces the golden's scale {}", *o.scale, g.scale));
    if (o.empty_rows) notes.push_back(fmt::format("⟦empty_rows⟧ {} replaces the golden's {}", *o.empty_rows, g.empty_rows));
    if (o.dtype) notes.push_back(fmt::format("⟦dtype⟧ {} replaces the golden's {}", *o.dtype, g.dtype));
    return p;
}

}  // namespace

CheckResult check_golden(const Problem& given, const Trace& golden, const CheckOptions& options) {
    CheckResult result;
    result.command = golden.command;
    RunOptions run = options.run;
    const Problem problem = golden_problem(given, golden.problem, options.overrides, run, result.notes);
    std::vector<Expectation> asked;  // the golden's steps, to pick grad's options as a file's expect entries do
    for (const auto& step : golden.steps) asked.push_back({step.name, step.head, step.batch, step.t, step.tile, std::nullopt, {}, 0, 0, false, ""});
    GradOptions grad = grad_options_for(asked, options.tiled);
    for (const auto& [key, value] : golden.numbers)
        if (key == "jacobian_row") grad.row = static_cast<std::size_t>(value);
    const Trace trace = compute_trace(golden.command, problem, run, options.decode, options.tiled, grad);
    const Tolerance tolerance{options.atol.value_or(tolerances::golden_f64.atol), options.rtol.value_or(tolerances::golden_f64.rtol)};
    std::size_t renamed = 0;
    for (const auto& step : golden.steps) {
        const StepName name = current_name(step.name, step.t || step.tile, renamed);
        result.steps.push_back(compare_step(trace, name, step.head, step.batch, step.t, step.tile, step.values, tolerance));
    }
    note_renamed(renamed, "golden step", "golden steps", result.notes);
    return result;
}

}  // namespace attn_trace
