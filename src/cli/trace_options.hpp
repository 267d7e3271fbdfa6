#pragma once
// The options shared by run, decode, tiled and explain
// (docs/COMMANDS.md#options-shared-by-run-decode-and-tiled), and how they override what
// the problem file says.
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "attn_trace/explain.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/pitfalls.hpp"
#include "attn_trace/problem.hpp"
#include "attn_trace/render.hpp"
#include "trace_budget.hpp"

namespace attn_trace::cli {

struct TraceOptions {
    std::string problem_path;
    std::string mask, scale, empty_rows;  // empty = as the file says
    std::string dtype;  // empty = the file's "dtype", else f64
    std::string backend = "cpu";
    Format format = Format::text;
    std::optional<MathStyle> math;  // --math; unset: dollars
    std::string steps;
    std::optional<int> head, batch;
    int precision = 4;
    std::string color = "auto";
    bool full = false;
    bool allow_nonfinite = false;  // "allow_nonfinite": true from the command line
    bool train = false, eval = false;  // dropout's mode, overriding the file
    bool heatmap = false;  // the weights as a terminal grid instead of the tables
    std::string svg;       // also write the weights heatmap to this SVG file
    std::string pitfall;   // run only: a mistake shown next to the right computation
    Budget budget;         // --max-memory, --max-output
    ExplainSource page_source;  // --format html: decode's --prefill, tiled's blocks, for the cells' explanations
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
// The --math given, or dollars; refuses --math with a format other than Markdown,
// where it would change nothing.
MathStyle math_style(const std::optional<MathStyle>& math, Format format);

// Loads the problem and applies --mask, --scale, --empty-rows over the file's values.
Problem load_with_overrides(const TraceOptions& options);
RunOptions run_options(const TraceOptions& options, const Problem& problem);  // the dtype: --dtype, else the file's, else f64
RenderOptions render_options(const TraceOptions& options, const Problem& problem);
// --color after NO_COLOR and the terminal test: whether to print ANSI colours.
bool use_color(const std::string& setting);

// Writes the trace in the chosen format (or --heatmap, or the pitfall `run
// --pitfall` computed beside it) to standard output, and the --svg file when asked.
// `pictured`: the trace --heatmap and --svg draw when it is not the printed one
// (decode's text prints a summary; grad draws its forward, --steps narrowed to the
// forward's own steps). `forward`: grad's forward trace, for the page
// to hatch the gradients' zeros that the mask makes.
void print_trace(const Trace& trace, const TraceOptions& options, const Problem& problem, const Pitfall* pitfall = nullptr,
                 const Trace* pictured = nullptr, const Trace* forward = nullptr);

}  // namespace attn_trace::cli
