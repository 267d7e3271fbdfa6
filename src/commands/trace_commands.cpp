// run, decode, tiled, grad and permute as functions: each estimates its memory before
// it computes and refuses past the budget, then traces (in f32 or a half type, beside
// the same run in f64 that measures it).
#include "attn_trace/trace_commands.hpp"

#include <fmt/format.h>

#include "attn_trace/cli_words.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/permutation.hpp"
#include "attn_trace/size_text.hpp"

namespace attn_trace {

namespace {

RunOptions run_options_of(const Problem& problem, const TraceRequest& request) { return {problem.dtype.value_or(Dtype::f64), request.backend}; }

// A result that holds its problem and the options it is computed with, its trace to come.
TraceResult result_for(Problem problem, const TraceRequest& request) {
    TraceResult result;
    result.problem = std::move(problem);
    result.run = run_options_of(result.problem, request);
    return result;
}

// Why `run` takes the fast path, or "" for the full trace. Past the memory budget it
// takes the fast path (docs/COMMANDS.md#run), which never holds n×m, rather than swapping
// or being killed. In f32 or a half type the f64 run it is measured against is held
// beside it (compared_trace_bytes). Its settings are marked: an error words them as its
// front does, the trace's note as the CLI does (cli_words).
std::string fast_path_reason(const Problem& p, Dtype dtype, bool requested, const Budget& budget) {
    if (requested) return "⟦fast⟧";
    const double bytes = compared_trace_bytes(full_trace_bytes(p), dtype);
    if (bytes <= static_cast<double>(budget.memory)) return "";
    return fmt::format("the full trace of n = {} × m = {} × {} head{}{} would hold about {}, over the {} budget (⟦max_memory⟧)", p.n, p.m, p.heads,
                       p.heads == 1 ? "" : "s", dtype == Dtype::f64 ? "" : fmt::format(" in {}, with the f64 run it is measured against,", dtype_name(dtype)),
                       size_text(bytes), size_text(static_cast<double>(budget.memory)));
}

}  // namespace

Problem load_with_overrides(const ProblemSource& source, const ProblemOverrides& overrides) {
    if (source.model && !source.text) throw InputError("a model in memory is read with a problem given as text");
    Problem problem = source.text ? parse_problem(*source.text, source.label, source.allow_nonfinite, source.model) : load_problem(source.path, source.allow_nonfinite);
    apply_overrides(problem, overrides);
    return problem;
}

TraceResult run_command(Problem problem, const RunRequest& request) {
    TraceResult result = result_for(std::move(problem), request);
    const Problem& p = result.problem;
    const std::string reason = fast_path_reason(p, result.run.dtype, request.fast, request.budget);
    // A half type is traced step by step only: past the budget, the fast path is not the way out.
    if (!request.fast && !reason.empty() && is_half(result.run.dtype))
        throw InputError(fmt::format("{}: {}, and {} is traced step by step only (the fast path computes in f64 or f32): raise ⟦max_memory⟧, "
                                     "lower n, or use ⟦dtype⟧ f32, which takes the fast path",
                                     p.file, reason, dtype_name(result.run.dtype)));
    // A pitfall replays the full (n, m) steps with a mistake in them, which the fast path
    // never holds: say so before computing anything.
    if (!reason.empty() && !request.pitfall.empty())
        throw InputError(fmt::format("⟦pitfall⟧ {} compares the full (n, m) steps, which the fast path does not keep, and this run takes the "
                                     "fast path ({}): {}",
                                     request.pitfall, reason, request.fast ? "leave out ⟦fast⟧" : "try the pitfall on a smaller problem"));
    result.trace = traced_against_f64(result.run, [&](const RunOptions& run) {
        return reason.empty() ? pipeline_full(p, run) : pipeline_fast(p, run, FastPathOptions{.reason = cli_words(reason)});
    });
    if (!request.pitfall.empty()) result.pitfall = compute_pitfall(request.pitfall, p, result.trace, result.run);
    return result;
}

TraceResult decode_command(Problem problem, const DecodeRequest& request) {
    TraceResult result = result_for(std::move(problem), request);
    refuse_compared_over_budget(result.problem, "decode", decode_trace_bytes(result.problem), result.run.dtype, request.budget);
    result.trace = traced_against_f64(result.run, [&](const RunOptions& run) { return pipeline_decode(result.problem, run, request.decode); });
    result.page_source.decode = request.decode;
    return result;
}

TraceResult tiled_command(Problem problem, const TiledRequest& request) {
    TraceResult result = result_for(std::move(problem), request);
    refuse_compared_over_budget(result.problem, "tiled", tiled_trace_bytes(result.problem, request.tiled), result.run.dtype, request.budget);
    result.trace = traced_against_f64(result.run, [&](const RunOptions& run) { return pipeline_tiled(result.problem, run, request.tiled); });
    result.page_source.tiled = request.tiled;
    return result;
}

TraceResult grad_command(Problem problem, const GradRequest& request) {
    TraceResult result = result_for(std::move(problem), request);
    const Problem& p = result.problem;
    const bool streamed = request.grad.tiled || request.grad.fast;
    // Untiled: the forward trace and about as many (n, m) steps again. The fused backward
    // holds O(n) per head. The forward drawn or hatched beside it is one more full trace:
    // `within` counts it.
    const double full = full_trace_bytes(p), grad_bytes = streamed ? 0 : 2 * full;
    if (!streamed) refuse_compared_over_budget(p, "grad", grad_bytes, result.run.dtype, request.budget);
    const bool within = compared_trace_bytes(grad_bytes, result.run.dtype) + full <= static_cast<double>(request.budget.memory);
    const bool pictures = !request.pictures.empty();
    if (pictures && !within)
        throw InputError(fmt::format("{}: {} draws the forward weights A, whose full trace of n = {} × m = {} × {} head(s) would hold about {} "
                                     "beside the gradients'; the limit is {} (⟦max_memory⟧): leave it out, or raise ⟦max_memory⟧",
                                     p.file, request.pictures, p.n, p.m, p.heads, size_text(full), size_text(static_cast<double>(request.budget.memory))));
    if ((request.page && within) || pictures) {
        Trace forward = pipeline_full(p, result.run);
        if (request.page && within) result.forward = forward;
        if (pictures) result.pictured = std::move(forward);
    }
    result.trace = traced_against_f64(result.run, [&](const RunOptions& run) { return pipeline_grad(p, run, request.grad); });
    return result;
}

TraceResult permute_command(Problem problem, const PermuteRequest& request) {
    TraceResult result = result_for(std::move(problem), request);
    const Problem& p = result.problem;
    const std::size_t rows = permuted_rows(p, request.source);
    PermuteOptions permute;
    permute.source = request.source;
    permute.perm = request.perm.empty() ? random_permutation(rows, request.seed) : parse_permutation(request.perm, rows);
    refuse_over_budget(p, "permute", 2 * full_trace_bytes(p), request.budget);  // two full traces are computed
    result.trace = permutation_trace(p, result.run, permute);
    return result;
}

std::string explain_command(const Problem& p, const ExplainRequest& request) {
    // The estimate counts what the target needs.
    const double bytes = explain_bytes(p, request.source), limit = static_cast<double>(request.budget.memory);
    const auto& source = request.source;
    if (bytes > limit)
        throw InputError(fmt::format("{}: explaining '{}' would hold about {} (n = {}, m = {}, {} head{}{}); the limit is {} (⟦max_memory⟧){}", p.file,
                                     request.target.spec, size_text(bytes), p.n, p.m, p.heads, p.heads == 1 ? "" : "s",
                                     source.tile ? fmt::format(", tiles of {} × {} scores", source.tiled.block_q, source.tiled.block_k) : "",
                                     size_text(limit), source.tile ? ": choose a smaller ⟦block_q⟧ and ⟦block_k⟧" : ""));
    return explain_problem(p, run_options_of(p, request), request.target, request.options, source);
}

}  // namespace attn_trace
