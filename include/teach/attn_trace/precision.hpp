#pragma once
// `precision` (docs/COMMANDS.md#precision): one problem run in f64, f32, f16 and bf16 side
// by side, and per step how far each type is from f64 and where an inf or NaN first appears
// that f64 does not have. Without the max shift the softmax exponentiates the masked scores
// themselves, which shows the overflow the shift prevents (f16's exp(z) passes 65 504 for
// z > ln 65 504 ≈ 11.09).
#include <optional>
#include <string>
#include <vector>

#include "attn_trace/dtype.hpp"
#include "attn_trace/problem.hpp"

namespace attn_trace {

struct PrecisionOptions {
    bool max_shift = true;
    std::string backend = "cpu";
};

// One step of one type's run, against the same step in f64.
struct PrecisionStep {
    std::string name;  // as the trace writes it (shown_name)
    std::optional<int> head, batch;
    double max_abs_error = 0;  // largest |value − f64 value| (value_difference)
    double max_rel_error = 0;  // largest |value − f64 value| / |f64 value| over f64 values finite and not 0
};

struct PrecisionRun {
    Dtype dtype = Dtype::f64;
    std::optional<std::string> first_nonfinite;  // the first step with an inf or NaN where f64 is finite
    std::optional<int> first_nonfinite_head, first_nonfinite_batch;
    std::vector<PrecisionStep> steps;
};

struct PrecisionReport {
    std::string title, problem_line;  // the problem's title and describe_problem's line
    bool max_shift = true;
    std::vector<PrecisionRun> runs;  // f64, f32, f16, bf16
};

// Runs the full pipeline in the four types. Overflow in any of them is traced, not
// refused: finding it is the point. Throws what the problem's own validation throws.
PrecisionReport measure_precision(const Problem& problem, const PrecisionOptions& options);

std::string precision_text(const PrecisionReport& report);
std::string precision_json(const PrecisionReport& report);
std::string precision_markdown(const PrecisionReport& report);
std::string precision_latex(const PrecisionReport& report);  // a fragment for an article with amsmath
// The largest absolute error by step, one line per type, on a log scale; a step whose
// error is infinite is drawn at the top edge and labelled.
std::string precision_svg(const PrecisionReport& report);

}  // namespace attn_trace
