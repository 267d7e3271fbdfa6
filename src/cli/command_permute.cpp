// `permute`: the permutation experiment (docs/COMMANDS.md#permute).
#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/permutation.hpp"
#include "commands.hpp"
#include "budget_options.hpp"
#include "trace_options.hpp"

namespace attn_trace::cli {

namespace {

// permute's own options beside the trace's: P given, or drawn from a seed, and which rows it moves.
struct PermuteCommandOptions {
    TraceOptions trace;
    std::string perm;
    std::optional<long long> seed;
    bool source = false;
};

void add_permute_command(CLI::App& app, int& exit_code) {
    static PermuteCommandOptions o;
    auto* permute = app.add_subcommand("permute", "the permutation experiment: shuffle the tokens, and the outputs come back shuffled (or not)");
    permute->footer(R"(Runs the problem and the same problem with its token rows permuted by P (X, or Q, K and V given
directly, with tokens and explicit positions; masks and lengths stay where they are: they belong
to positions), and shows out(P·X) beside P·out(X), per head and for the layer's output. Row i of
the permuted input is row P[i] of the original. Without masks, RoPE or ALiBi attention treats its
tokens as a set and the two agree to rounding (max_abs_diff_equivariance); otherwise the note names
what ties tokens to their places. --source permutes only the source rows of cross-attention: the
outputs do not move at all (max_abs_diff_invariance). Without --perm, P is drawn from --seed (0).

Examples:
  attn-trace permute examples/damaged_on_arrival.json --perm 2,0,1
  attn-trace permute examples/damaged_on_arrival.json --perm 2,0,1 --mask causal
  attn-trace permute examples/damaged_on_arrival.json --perm 2,0,1 --format html > permute.html
  attn-trace permute examples/cross_attention.json --source --seed 3 --format json)");
    add_trace_options(*permute, o.trace);
    auto* perm_option = permute->add_option("--perm", o.perm, "P as comma-separated row indices, e.g. 2,0,1");
    permute->add_option("--seed", o.seed, "draw P at random with this seed (default 0)")->excludes(perm_option);
    permute->add_flag("--source", o.source, "permute the source rows of cross-attention instead of the queries");
    permute->callback([&exit_code] {
        auto request = trace_request<PermuteRequest>(o.trace);
        request.perm = o.perm;
        request.seed = whole_number_option("--seed", o.seed.value_or(0), 0);
        request.source = o.source;
        print_result(permute_command(load_with_overrides(o.trace), request), o.trace);
        exit_code = 0;
    });
}

const CommandRegistration registration{35, add_permute_command};

}  // namespace

}  // namespace attn_trace::cli
