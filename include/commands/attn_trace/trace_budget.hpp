#pragma once
// What a command may spend before it starts (issue 12): the memory of the trace it
// keeps, with the full computation beside it, and the bytes it prints. Each is
// estimated before the allocation it bounds, and a problem past the budget is
// refused with the figures (exit 2) rather than swapping, being killed, or
// printing hundreds of megabytes. ⟦max_memory⟧ and ⟦max_output⟧ set the budget.
#include <cstdint>
#include <string>

#include "attn_trace/pipeline.hpp"
#include "attn_trace/problem.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/size_text.hpp"

namespace attn_trace {

struct Budget {
    // Well inside this project's 24 GiB machines, with room for the renderers' copies.
    std::uint64_t memory = std::uint64_t{4} << 30;
    // A quarter of a gigabyte of text is more than anyone reads; --steps, --head or
    // --batch choose what to print.
    std::uint64_t output = std::uint64_t{256} << 20;
};

// The bytes each pipeline's trace holds, estimated from the problem alone.
double full_trace_bytes(const Problem& problem);
double decode_trace_bytes(const Problem& problem);
double tiled_trace_bytes(const Problem& problem, const TiledOptions& tiled);

// A command that traces in f32 or a half type also runs the problem in f64 to measure
// each step against (traced_against_f64, pipeline.hpp), and holds both traces at once:
// `bytes`, one trace's estimate, twice; in f64 once.
double compared_trace_bytes(double bytes, Dtype dtype);

// Throws InputError when `bytes` (the command's own estimate) passes budget.memory.
void refuse_over_budget(const Problem& problem, const std::string& command, double bytes, const Budget& budget);
// As refuse_over_budget for a trace in `dtype` measured against f64: `bytes` is one
// trace's estimate, counted by compared_trace_bytes, and the message says why.
void refuse_compared_over_budget(const Problem& problem, const std::string& command, double bytes, Dtype dtype, const Budget& budget);

// Before anything is rendered: throws InputError when printing `trace` in `format`
// would pass budget.output, or its renderer beside the trace would pass budget.memory.
void refuse_large_output(const Problem& problem, const Trace& trace, Format format, const RenderOptions& options, const Budget& budget);

}  // namespace attn_trace
