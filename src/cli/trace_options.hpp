#pragma once
// The options shared by run, decode, tiled and explain
// (docs/COMMANDS.md#options-shared-by-run-decode-and-tiled), and how they override what
// the problem file says.
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "attn_trace/problem_overrides.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/trace_commands.hpp"
#include "budget_options.hpp"

namespace attn_trace::cli {

struct TraceOptions {
    std::string problem_path;
    ProblemOverrides overrides;  // --mask, --scale, --empty-rows, --dtype, --train/--eval
    bool train = false, eval = false;  // read into overrides.train
    std::string backend = "cpu";
    bool allow_nonfinite = false;  // "allow_nonfinite": true from the command line
    OutputRequest output;          // --format, --math, --head, --batch, --precision, --full, --heatmap (color and steps below)
    std::string steps;
    std::string color = "auto";
    std::string svg;      // also write the weights heatmap to this SVG file
    std::string pitfall;  // run only: a mistake shown next to the right computation
    Budget budget;        // --max-memory, --max-output
};

// Adds PROBLEM and the options that say what to compute (mask, scale, dtype,
// backend, empty rows, head, batch, precision): what explain shares.
void add_problem_options(CLI::App& command, TraceOptions& options);
// --empty-rows, --train and --eval: part of add_problem_options, and what `precision`
// takes beside its own few.
void add_empty_rows_and_dropout_options(CLI::App& command, TraceOptions& options);
// add_problem_options plus how to print a whole trace (format, steps, full,
// colour, heatmap, svg): what run, decode and tiled share; run also gets --pitfall.
void add_trace_options(CLI::App& command, TraceOptions& options);

// --math dollars|github, for a command that writes Markdown (docs/COMMANDS.md#output-formats).
void add_math_option(CLI::App& command, std::optional<MathStyle>& math);
// --standalone: LaTeX as a whole document (every command that writes LaTeX takes it).
void add_standalone_flag(CLI::App& command, bool& standalone);
// The --math given, or dollars; refuses --math with a format other than Markdown,
// where it would change nothing.
MathStyle math_style(const std::optional<MathStyle>& math, Format format);

// Loads the problem (docs/PROBLEM.md) and applies --mask, --scale, --empty-rows, --dtype,
// --train and --eval over the file's values (attn_trace/problem_overrides.hpp).
Problem load_with_overrides(const TraceOptions& options);
RunOptions run_options(const TraceOptions& options, const Problem& problem);  // the dtype: --dtype, else the file's, else f64
// What every trace command's request shares: --backend and the budget.
template <class Request>
Request trace_request(const TraceOptions& options) {
    Request request;
    request.backend = options.backend;
    request.budget = options.budget;
    return request;
}
// --color after NO_COLOR and the terminal test: whether to print ANSI colours.
bool use_color(const std::string& setting);

// Writes the result as the options ask (attn_trace/trace_commands.hpp's
// render_trace_output) to standard output, and the --svg file when asked.
void print_result(const TraceResult& result, const TraceOptions& options);

}  // namespace attn_trace::cli
