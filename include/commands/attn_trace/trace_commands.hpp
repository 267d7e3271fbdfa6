#pragma once
// The commands that compute a trace, as functions (docs/ARCHITECTURE.md#the-commands-layer):
// a request in, a result out, nothing printed and no exit code. The CLI (src/cli/) and
// the Python package (python/) are two fronts over these: each parses its own options
// into a request, calls, and shows the result with render_trace_output.
#include <optional>
#include <string>

#include "attn_trace/explain.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/pitfalls.hpp"
#include "attn_trace/problem.hpp"
#include "attn_trace/problem_overrides.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/trace.hpp"
#include "attn_trace/trace_budget.hpp"

namespace attn_trace {

// Where a problem comes from: a file ("-" for standard input), or JSON text named
// `label` in messages.
struct ProblemSource {
    std::string path;
    std::optional<std::string> text;
    std::string label = "<problem>";
    bool allow_nonfinite = false;  // as "allow_nonfinite": true in the file
    const ModelInMemory* model = nullptr;  // a model in memory the text's checkpoint may name
};

// Reads the problem and applies the overrides over its own settings.
Problem load_with_overrides(const ProblemSource& source, const ProblemOverrides& overrides);

// What every trace command shares (docs/COMMANDS.md#options-shared-by-run-decode-and-tiled).
struct TraceRequest {
    std::string backend = "cpu";
    Budget budget;
};

// A trace command's result: the trace, and what showing it needs.
struct TraceResult {
    Problem problem;
    Trace trace;
    // What a heatmap and an SVG draw when it is not `trace`: decode's whole trace (its text
    // prints a summary), grad's forward.
    std::optional<Trace> pictured;
    std::optional<Trace> forward;  // grad's forward, for the page to hatch the mask's zeros
    std::optional<Pitfall> pitfall;
    ExplainSource page_source;  // decode's prefill, tiled's blocks: the page's explanations
    RunOptions run;             // the dtype and backend it was computed with
};

struct RunRequest : TraceRequest {
    bool fast = false;    // the fast path even when the full trace fits
    std::string pitfall;  // a mistake shown beside the right computation ("" for none)
};
// `run` (docs/COMMANDS.md#run): the full trace, or the fast path past the memory budget.
TraceResult run_command(Problem problem, const RunRequest& request);

struct DecodeRequest : TraceRequest {
    DecodeOptions decode;
};
TraceResult decode_command(Problem problem, const DecodeRequest& request);  // docs/COMMANDS.md#decode

struct TiledRequest : TraceRequest {
    TiledOptions tiled;
};
TraceResult tiled_command(Problem problem, const TiledRequest& request);  // docs/COMMANDS.md#tiled

struct GradRequest : TraceRequest {
    GradOptions grad;
    // The forward trace beside the gradients: what a heatmap and an SVG draw (`pictures`
    // names the setting that asks, ⟦heatmap⟧ or ⟦svg⟧; refused past the budget), and what
    // the page hatches with (`page`; kept only within the budget).
    std::string pictures;
    bool page = false;
};
TraceResult grad_command(Problem problem, const GradRequest& request);  // docs/COMMANDS.md#grad

struct PermuteRequest : TraceRequest {
    std::string perm;                  // "2,0,1"; "" draws P from seed
    std::uint64_t seed = 0;
    bool source = false;               // permute the source rows of cross-attention
};
TraceResult permute_command(Problem problem, const PermuteRequest& request);  // docs/COMMANDS.md#permute

struct ExplainRequest : TraceRequest {
    ExplainTarget target;    // parse_cell_spec("scores[0,2]") or parse_row_spec("weights[1]")
    ExplainOptions options;  // head, batch, precision, format, maths
    ExplainSource source;    // a decode step t or a tile, with their options
};
// `explain` (docs/COMMANDS.md#explain): refused past the budget before anything is computed.
std::string explain_command(const Problem& problem, const ExplainRequest& request);

// How a trace is shown: what changes only the output, never the numbers.
struct OutputRequest {
    Format format = Format::text;
    std::optional<MathStyle> math;   // Markdown's maths; only with Format::markdown
    std::vector<std::string> steps;  // only these steps ("" none: every step)
    std::optional<int> head, batch;
    int precision = 4;
    bool color = false;  // ANSI colours (text only)
    bool full = false;   // every row and column of large matrices
    bool heatmap = false;  // the weights as a terminal grid
    bool standalone = false;  // LaTeX as a whole document, not a fragment
    Budget budget;
};

// The options a renderer takes, checked against the problem (head and batch in range,
// step names known, Markdown's maths only with Markdown).
RenderOptions render_options(const OutputRequest& output, const Problem& problem);

// Exactly what the CLI prints on standard output for the result: the trace in its
// format, the heatmap, the pitfall side by side, decode's per-step lines. Refuses
// (InputError) output past the budget, and steps asked for that the trace lacks.
std::string render_trace_output(const TraceResult& result, const OutputRequest& output);

// What a command writes in `format`, as a whole document when `standalone` asks for
// one: LaTeX only (latex_document); refused (InputError) with any other format.
std::string written_document(const std::string& text, Format format, bool standalone);

// The same refusal on its own, for a command to make before it computes anything.
void require_standalone_format(Format format, bool standalone);

// The SVG heatmap of the weights the result draws (its `pictured` trace, else its trace).
std::string render_trace_svg(const TraceResult& result, const OutputRequest& output);

}  // namespace attn_trace
