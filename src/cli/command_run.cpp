#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/pitfalls.hpp"
#include "commands.hpp"
#include "trace_budget.hpp"
#include "trace_options.hpp"

namespace attn_trace::cli {

namespace {

// Past the memory budget `run` takes the fast path (docs/COMMANDS.md#run) instead, which never
// holds n×m, rather than swapping or being killed.
// Why `run` takes the fast path, or "" for the full trace.
// In f32 or a half type the f64 run it is measured against is held beside it (compared_trace_bytes).
std::string fast_path_reason(const Problem& p, Dtype dtype, bool requested, const Budget& budget) {
    if (requested) return "--fast";
    const double bytes = compared_trace_bytes(full_trace_bytes(p), dtype);
    if (bytes <= static_cast<double>(budget.memory)) return "";
    return fmt::format("the full trace of n = {} × m = {} × {} head{}{} would hold about {}, over the {} budget (--max-memory)", p.n, p.m, p.heads,
                       p.heads == 1 ? "" : "s", dtype == Dtype::f64 ? "" : fmt::format(" in {}, with the f64 run it is measured against,", dtype_name(dtype)),
                       size_text(bytes), size_text(static_cast<double>(budget.memory)));
}

void add_run_command(CLI::App& app, int& exit_code) {
    static TraceOptions options;
    static bool fast = false;
    auto* run = app.add_subcommand("run", "the full step trace: scores, scale, mask, softmax, A·V, heads, W_O");
    run->footer(R"(Examples:
  attn-trace run examples/damaged_on_arrival.json
  attn-trace run examples/damaged_on_arrival.json --mask causal --steps scores,weights,out
  attn-trace run examples/damaged_on_arrival.json --format json --dtype f32
  echo '{"Q": [[1, 0]], "K": [[1, 0], [0, 1]], "V": [[1, 2], [3, 4]]}' | attn-trace run -
  attn-trace random --n 65536 --dk 64 -o big.json && attn-trace run big.json --dtype f32
  attn-trace run examples/sparse_bigbird.json --steps mask,reach
  attn-trace run examples/chunked_local_attention.json --steps masked,weights
  attn-trace run examples/damaged_on_arrival.json --mask '{"sparse": {"window": {"left": 1, "right": 1}, "global": [0]}}'
  attn-trace run examples/mla_small.json --steps c_kv,q_latent,scores
  attn-trace run examples/dropout_train.json --steps keep,dropped
  attn-trace run examples/damaged_on_arrival.json --mask causal --format html > damaged.html

When the full trace would pass --max-memory (4G by default; eight n×m matrices per head, twice
that in f32, f16 or bf16, whose run is measured against the same run in f64),
run takes the fast path by itself: the fused tiled kernel of `attn-trace bench`, which keeps only row_max,
row_sum and out per head (and concat, final) and says so in a note.)");
    add_trace_options(*run, options);
    run->add_flag("--fast", fast, "take the fast path (fused, tiled, multi-threaded; no (n, m) steps) even when the full trace fits");
    run->callback([&exit_code] {
        const Problem problem = load_with_overrides(options);
        const Dtype dtype = run_options(options, problem).dtype;
        const std::string reason = fast_path_reason(problem, dtype, fast, options.budget);
        // A half type is traced step by step only: past the budget, --fast is not the way out.
        if (!fast && !reason.empty() && is_half(dtype))
            throw InputError(fmt::format("{}: {}, and {} is traced step by step only (the fast path computes in f64 or f32): raise --max-memory, "
                                         "lower n, or use --dtype f32, which takes the fast path",
                                         problem.file, reason, dtype_name(dtype)));
        // A pitfall replays the full (n, m) steps with a mistake in them, which the
        // fast path never holds: say so before computing anything.
        if (!reason.empty() && !options.pitfall.empty())
            throw InputError(fmt::format("--pitfall {} compares the full (n, m) steps, which the fast path does not keep, and this run takes the "
                                         "fast path ({}): {}",
                                         options.pitfall, reason, fast ? "leave out --fast" : "try the pitfall on a smaller problem"));
        const Trace trace = traced_against_f64(run_options(options, problem), [&](const RunOptions& run) {
            return reason.empty() ? pipeline_full(problem, run) : pipeline_fast(problem, run, FastPathOptions{.reason = reason});
        });
        if (options.pitfall.empty()) print_trace(trace, options, problem);
        else {
            if (options.format != Format::text || options.heatmap)
                throw InputError("--pitfall prints the two computations side by side as text: leave out --format and --heatmap");
            const Pitfall pitfall = compute_pitfall(options.pitfall, problem, trace, run_options(options, problem));
            print_trace(trace, options, problem, &pitfall);
        }
        exit_code = 0;
    });
}

const CommandRegistration registration{10, add_run_command};

}  // namespace

}  // namespace attn_trace::cli
