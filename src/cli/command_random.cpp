// `random`: writes a problem file whose matrices are the project's portable
// random generators (compact at any n), or their numbers with --literal.
#include <fstream>
#include <iostream>
#include <limits>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/problem.hpp"
#include "attn_trace/report_commands.hpp"
#include "commands.hpp"

namespace attn_trace::cli {

namespace {

struct RandomOptions {
    RandomRequest request;
    std::string output = "-";
};

void add_random_command(CLI::App& app, int& exit_code) {
    static RandomOptions o;
    auto* random = app.add_subcommand("random", "write a random problem file (seeded, identical on every platform)");
    random->footer(R"(Without --d-model the file gives Q, K, V directly; with it, X and W_Q, W_K, W_V.
Matrices are written as {"random": {"shape": [r, c], "seed": S, "dist": D}} (a few lines even
for n = 65536); --literal writes the numbers instead.

Examples:
  attn-trace random --n 4 --dk 2 --seed 7 -o problem.json
  attn-trace random --n 8 --d-model 16 --heads 4 --kv-heads 2 --mask causal --literal
  attn-trace random --n 65536 --dk 64 --dist normal -o big.json)");
    random->add_option("--n", o.request.n, "queries")->capture_default_str();
    random->add_option("--m", o.request.m, "keys (default n; with --d-model, a source sequence for cross-attention)");
    random->add_option("--d-model", o.request.d_model, "token width: write X and projections instead of Q, K, V");
    random->add_option("--dk", o.request.d_k, "query/key width per head")->capture_default_str();
    random->add_option("--dv", o.request.d_v, "value width per head (default d_k)");
    random->add_option("--heads", o.request.heads, "query heads")->check(CLI::Range(1, 4096))->capture_default_str();
    random->add_option("--kv-heads", o.request.kv_heads, "key/value heads (default heads; must divide heads)")->check(CLI::Range(1, 4096));
    // A problem file's seeds run to 2^63 − 1 (docs/PROBLEM.md#matrix-forms), and the last matrix uses seed+4.
    random->add_option("--seed", o.request.seed, "seed of the first matrix; the others use seed+1, seed+2, ...")
        ->check(CLI::Range(std::uint64_t{0}, static_cast<std::uint64_t>(std::numeric_limits<long>::max()) - 4))
        ->capture_default_str();
    random->add_option("--dist", o.request.dist, "normal, uniform or integers")->check(CLI::IsMember({"normal", "uniform", "integers"}))->capture_default_str();
    random->add_option("--mask", o.request.mask, "a mask spec to include (" + mask_string_forms() + R"(, or JSON such as '{"sparse": {"window": 1}}'))");
    random->add_flag("--literal", o.request.literal, "write the numbers, not generator specs");
    random->add_option("-o,--output", o.output, "output file, - for standard output")->capture_default_str();
    random->callback([&exit_code] {
        const std::string text = random_problem_text(o.request);
        if (o.output == "-") {
            std::cout << text;
        } else {
            std::ofstream out(o.output);
            if (!out || !(out << text)) throw InputError(fmt::format("{}: cannot write the problem file", o.output));
        }
        exit_code = 0;
    });
}

const CommandRegistration registration{90, add_random_command};

}  // namespace

}  // namespace attn_trace::cli
