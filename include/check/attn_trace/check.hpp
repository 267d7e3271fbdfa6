#pragma once
// Regression checks (docs/COMMANDS.md#check): the computed trace against a file's `expect`
// entries, or against a golden trace written by `run --format json`.
#include <optional>
#include <string>
#include <vector>

#include "attn_trace/compare.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/problem.hpp"
#include "attn_trace/problem_overrides.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/trace.hpp"

namespace attn_trace {

struct CheckOptions {
    RunOptions run;
    // With --golden: settings that replace the golden's (docs/COMMANDS.md#check); check names each one it replaced.
    ProblemOverrides overrides;
    std::optional<double> atol, rtol;  // override every entry's tolerance
    // --decimals N: an entry without a tolerance of its own is met by values written to N
    // decimals (atol ½·10⁻ᴺ, rtol 0); --atol and --rtol still win (docs/COMMANDS.md#check).
    std::optional<int> decimals;
    DecodeOptions decode;              // --prefill, for files whose steps carry t
    TiledOptions tiled;                // --block-q, --block-k, for files whose steps carry tile
};

// One expected step and how it compared.
struct StepCheck {
    std::string label;  // "weights (head 0)"
    bool found = true;
    std::size_t expected_rows = 0, expected_cols = 0, got_rows = 0, got_cols = 0;
    Tolerance tolerance = tolerances::check_default;
    Comparison comparison;
    bool passed() const { return found && comparison.passed(); }
};

struct CheckResult {
    std::string command;  // the pipeline the expectations belong to: run, decode, tiled, grad
    std::vector<StepCheck> steps;
    std::vector<std::string> notes;  // which settings a golden's comparison used, and what replaced them
    bool passed() const;
};

// The pipeline an expectation list asks for: backward steps (grad_…, jacobian, lse,
// delta, p) → grad, `t` → decode, `tile` → tiled, else run.
std::string pipeline_for(const std::vector<Expectation>& expect);

// grad's options for the entries: --row from jacobian entries' "row" (one row per
// file), --tiled at `tiles` when lse, delta or tiles of the backward are asked for.
GradOptions grad_options_for(const std::vector<Expectation>& expect, const TiledOptions& tiles);

CheckResult check_expectations(const Problem& problem, const CheckOptions& options);

// golden: a trace read back by load_golden_trace (render.hpp).
CheckResult check_golden(const Problem& problem, const Trace& golden, const CheckOptions& options);

}  // namespace attn_trace
