#pragma once
// The options shared by run, decode, tiled and explain (SPEC §2), and how they
// override what the problem file says.
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "attn_trace/pipeline.hpp"
#include "attn_trace/problem.hpp"
#include "attn_trace/render.hpp"

namespace attn_trace::cli {

struct TraceOptions {
    std::string problem_path;
    std::string mask, scale, empty_rows;  // empty = as the file says
    std::string dtype = "f64";
    std::string backend = "cpu";
    std::string format = "text";
    std::string steps;
    std::optional<int> head;
    int precision = 4;
    std::string color = "auto";
    bool full = false;
};

// Adds PROBLEM and the shared options to a subcommand.
void add_trace_options(CLI::App& command, TraceOptions& options);

// Loads the problem and applies --mask, --scale, --empty-rows over the file's values.
Problem load_with_overrides(const TraceOptions& options);
RunOptions run_options(const TraceOptions& options);
RenderOptions render_options(const TraceOptions& options, const Problem& problem);

// Writes the trace in the chosen format to standard output.
void print_trace(const Trace& trace, const TraceOptions& options, const Problem& problem);

}  // namespace attn_trace::cli
