#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/pipeline_fast.hpp"
#include "commands.hpp"
#include "trace_budget.hpp"
#include "trace_options.hpp"

namespace attn_trace::cli {

namespace {

// The full trace keeps about eight n×m matrices per head (scores, scaled, capped,
// mask, masked, exp, weights and their rendering). Past trace_budget_bytes `run`
// takes the fast path (SPEC §12) instead, which never holds n×m, rather than
// swapping or being killed.
double full_trace_bytes(const Problem& p) {
    return 8.0 * 8.0 * static_cast<double>(p.batch) * p.heads * static_cast<double>(p.n) * static_cast<double>(p.m);
}

// Why `run` takes the fast path, or "" for the full trace.
std::string fast_path_reason(const Problem& p, bool requested) {
    if (requested) return "--fast";
    const double bytes = full_trace_bytes(p);
    if (bytes <= trace_budget_bytes) return "";
    return fmt::format("the full trace of n = {} × m = {} × {} head{} would hold about {:.1f} GiB, over the {:.0f} GiB budget", p.n, p.m,
                       p.heads, p.heads == 1 ? "" : "s", bytes / (1 << 30), trace_budget_bytes / (1 << 30));
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

When the full trace would pass 4 GiB (eight n×m matrices per head), run takes the fast
path by itself: the fused tiled kernel of `attn-trace bench`, which keeps only row_max,
row_sum and out per head (and concat, final) and says so in a note.)");
    add_trace_options(*run, options);
    run->add_flag("--fast", fast, "take the fast path (fused, tiled, multi-threaded; no (n, m) steps) even when the full trace fits");
    run->callback([&exit_code] {
        const Problem problem = load_with_overrides(options);
        const std::string reason = fast_path_reason(problem, fast);
        // A pitfall replays the full (n, m) steps with a mistake in them, which the
        // fast path never holds: say so before computing anything.
        if (!reason.empty() && !options.pitfall.empty())
            throw InputError(fmt::format("--pitfall {} compares the full (n, m) steps, which the fast path does not keep, and this run takes the "
                                         "fast path ({}): {}",
                                         options.pitfall, reason, fast ? "leave out --fast" : "try the pitfall on a smaller problem"));
        const Trace trace = reason.empty() ? pipeline_full(problem, run_options(options))
                                           : pipeline_fast(problem, run_options(options), FastPathOptions{.reason = reason});
        print_trace(trace, options, problem);
        exit_code = 0;
    });
}

const CommandRegistration registration{10, add_run_command};

}  // namespace

}  // namespace attn_trace::cli
