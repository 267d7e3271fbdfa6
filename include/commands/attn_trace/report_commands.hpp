#pragma once
// The commands whose result is a report, not a trace (docs/COMMANDS.md#precision,
// #random): as functions over a request, for the CLI and the Python package alike.
#include <cstddef>
#include <cstdint>
#include <string>

#include "attn_trace/format_table.hpp"
#include "attn_trace/precision.hpp"
#include "attn_trace/problem.hpp"
#include "attn_trace/trace_commands.hpp"

namespace attn_trace {

struct PrecisionRequest : TraceRequest {
    bool max_shift = true;  // false: softmax without subtracting the row max, to show what overflows
};
// `precision`: the problem in f64, f32, f16 and bf16; refused past the budget first
// (four full traces are held at once).
PrecisionReport precision_command(const Problem& problem, const PrecisionRequest& request);
// text, json, markdown or latex.
std::string render_precision(const PrecisionReport& report, Format format);

struct RandomRequest {
    std::size_t n = 4, m = 0, d_model = 0, d_k = 2, d_v = 0;  // m, d_v 0: n, d_k; d_model 0: Q, K, V given directly
    int heads = 1, kv_heads = 0;                              // kv_heads 0: heads
    std::uint64_t seed = 0;
    std::string dist = "normal";  // normal, uniform or integers
    std::string mask;             // a mask spec to include ("" none)
    bool literal = false;         // the numbers, not generator specs
};
// `random`: a problem file's text, seeded, the same on every platform.
std::string random_problem_text(const RandomRequest& request);

}  // namespace attn_trace
