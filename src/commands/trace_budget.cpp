#include "attn_trace/trace_budget.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"

namespace attn_trace {

namespace {

// A step's own bookkeeping beside its numbers: name, formula, labels, the
// matrix's header and the allocator's rounding (tiled at n = 600 with 2 × 2
// tiles: 450 000 steps in about 120 MB).
constexpr double bytes_per_step = 512;

double heads_n_m(const Problem& p) { return static_cast<double>(p.batch) * p.heads * static_cast<double>(p.n) * static_cast<double>(p.m); }

std::size_t blocks(std::size_t count, std::size_t size) { return (count + size - 1) / size; }

}  // namespace

// The full trace keeps about eight n×m matrices per head (scores, scaled, capped,
// mask, masked, exp, weights and their rendering).
double full_trace_bytes(const Problem& p) { return 8.0 * 8.0 * heads_n_m(p); }

// Every step keeps its cache (t+1 rows of d_k + d_v per KV head), its scores and
// weights, and the full computation beside it keeps about eight n×m matrices per
// head; per query t, one step per KV head for each cache and three per head.
double decode_trace_bytes(const Problem& p) {
    const double n_m = static_cast<double>(p.batch) * static_cast<double>(p.n) * static_cast<double>(p.m);
    const double steps = static_cast<double>(p.batch) * static_cast<double>(p.n) * (2.0 * p.kv_heads + 3.0 * p.heads);
    return 8.0 * n_m * (10.0 * p.heads + 0.5 * p.kv_heads * static_cast<double>(p.d_k + p.d_v)) + bytes_per_step * steps;
}

// The tiles' scores add up to n·m per head, their m, ℓ, u and rescale to a few
// more, and the full computation beside them keeps about eight n×m matrices per
// head; each tile is five steps (scores, m, rescale, l, u).
double tiled_trace_bytes(const Problem& p, const TiledOptions& tiled) {
    const double tiles = static_cast<double>(p.batch) * p.heads * static_cast<double>(blocks(p.n, tiled.block_q)) *
                         static_cast<double>(blocks(p.m, tiled.block_k));
    return 8.0 * heads_n_m(p) * (9.0 + (3.0 + static_cast<double>(p.d_v)) / static_cast<double>(std::max<std::size_t>(1, tiled.block_k))) +
           bytes_per_step * 5.0 * tiles;
}

double compared_trace_bytes(double bytes, Dtype dtype) { return dtype == Dtype::f64 ? bytes : 2 * bytes; }

namespace {

// `beside`: what else is held with the trace, "" for nothing.
void refuse(const Problem& p, const std::string& command, const std::string& beside, double bytes, const Budget& budget) {
    if (bytes <= static_cast<double>(budget.memory)) return;
    throw InputError(fmt::format("{}: the {} trace of n = {} queries × m = {} keys × {} head{}{} would hold about {}; the limit is {} "
                                 "(⟦max_memory⟧). Try a smaller problem, or `attn-trace run` (which takes the fast path when the trace is too large).",
                                 p.file, command, p.n, p.m, p.heads, p.heads == 1 ? "" : "s", beside, size_text(bytes),
                                 size_text(static_cast<double>(budget.memory))));
}

}  // namespace

void refuse_over_budget(const Problem& p, const std::string& command, double bytes, const Budget& budget) {
    refuse(p, command, "", bytes, budget);
}

void refuse_compared_over_budget(const Problem& p, const std::string& command, double bytes, Dtype dtype, const Budget& budget) {
    if (dtype == Dtype::f64) return refuse_over_budget(p, command, bytes, budget);
    refuse(p, command, fmt::format(" in {}, with the f64 run it is measured against,", dtype_name(dtype)), compared_trace_bytes(bytes, dtype), budget);
}

void refuse_large_output(const Problem& problem, const Trace& trace, Format format, const RenderOptions& options, const Budget& budget) {
    double trace_bytes = 0;
    for (const Step& step : trace.steps) trace_bytes += 8.0 * static_cast<double>(step.values.data().size()) + bytes_per_step;
    const OutputEstimate e = estimate_output(trace, format, options);
    const std::string what = fmt::format("{} step{} and {} numbers in {}", e.steps, e.steps == 1 ? "" : "s", e.cells, format);
    const std::string choose = "choose what to print with ⟦steps⟧, ⟦head⟧ or ⟦batch⟧";
    if (e.bytes > static_cast<double>(budget.output))
        throw InputError(fmt::format("{}: the {} output would be about {} ({}); the limit is {} (⟦max_output⟧): {}", problem.file, trace.command, size_text(e.bytes), what,
                                     size_text(static_cast<double>(budget.output)), choose));
    if (e.memory + trace_bytes > static_cast<double>(budget.memory))
        throw InputError(fmt::format("{}: writing the {} output ({}) would hold about {} beside the trace's {}; the limit is {} (⟦max_memory⟧): {}{}",
                                     problem.file, trace.command, what, size_text(e.memory), size_text(trace_bytes), size_text(static_cast<double>(budget.memory)),
                                     choose, format == Format::json ? ", or ⟦format⟧ text" : ""));
}

}  // namespace attn_trace
