#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "commands.hpp"
#include "trace_options.hpp"

namespace attn_trace::cli {

namespace {

// The full trace keeps about eight n×m matrices per head (scores, scaled, capped,
// mask, masked, exp, weights and their rendering): refuse before allocating when
// that passes this budget, rather than swapping or being killed.
constexpr double trace_budget_bytes = 4.0 * (1 << 30);

void check_trace_memory(const Problem& p) {
    const double bytes = 8.0 * 8.0 * static_cast<double>(p.batch) * p.heads * static_cast<double>(p.n) * static_cast<double>(p.m);
    if (bytes > trace_budget_bytes)
        throw InputError(fmt::format("{}: the full trace of n = {} queries × m = {} keys × {} head{} would hold about {:.1f} GiB "
                                     "(eight n×m matrices per head); the limit is {:.0f} GiB. Use `attn-trace tiled` "
                                     "(never holds n×m) or a smaller problem.",
                                     p.file, p.n, p.m, p.heads, p.heads == 1 ? "" : "s", bytes / (1 << 30), trace_budget_bytes / (1 << 30)));
}

void add_run_command(CLI::App& app, int& exit_code) {
    static TraceOptions options;
    auto* run = app.add_subcommand("run", "the full step trace: scores, scale, mask, softmax, A·V, heads, W_O");
    run->footer(R"(Examples:
  attn-trace run examples/damaged_on_arrival.json
  attn-trace run examples/damaged_on_arrival.json --mask causal --steps scores,weights,out
  attn-trace run examples/damaged_on_arrival.json --format json --dtype f32
  echo '{"Q": [[1, 0]], "K": [[1, 0], [0, 1]], "V": [[1, 2], [3, 4]]}' | attn-trace run -)");
    add_trace_options(*run, options);
    run->callback([&exit_code] {
        const Problem problem = load_with_overrides(options);
        check_trace_memory(problem);
        const Trace trace = pipeline_full(problem, run_options(options));
        print_trace(trace, options, problem);
        exit_code = 0;
    });
}

const CommandRegistration registration{10, add_run_command};

}  // namespace

}  // namespace attn_trace::cli
