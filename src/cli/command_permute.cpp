// `permute`: the permutation experiment (docs/COMMANDS.md#permute).
#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/permutation.hpp"
#include "commands.hpp"
#include "trace_budget.hpp"
#include "trace_options.hpp"

namespace attn_trace::cli {

namespace {

void add_permute_command(CLI::App& app, int& exit_code) {
    static TraceOptions options;
    static std::string perm;
    static std::optional<long long> seed;
    static bool source = false;
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
    add_trace_options(*permute, options);
    auto* perm_option = permute->add_option("--perm", perm, "P as comma-separated row indices, e.g. 2,0,1");
    permute->add_option("--seed", seed, "draw P at random with this seed (default 0)")->excludes(perm_option);
    permute->add_flag("--source", source, "permute the source rows of cross-attention instead of the queries");
    permute->callback([&exit_code] {
        const Problem problem = load_with_overrides(options);
        const std::size_t rows = permuted_rows(problem, source);
        PermuteOptions permute_options;
        permute_options.source = source;
        permute_options.perm = perm.empty() ? random_permutation(rows, static_cast<std::uint64_t>(whole_number_option("--seed", seed.value_or(0), 0)))
                                            : parse_permutation(perm, rows);
        // Two full traces are computed.
        refuse_over_budget(problem, "permute", 2 * full_trace_bytes(problem), options.budget);
        print_trace(permutation_trace(problem, run_options(options), permute_options), options, problem);
        exit_code = 0;
    });
}

const CommandRegistration registration{35, add_permute_command};

}  // namespace

}  // namespace attn_trace::cli
