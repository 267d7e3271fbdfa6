// `random`: writes a problem file whose matrices are the project's portable
// random generators (compact at any n), or their numbers with --literal.
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn_trace/errors.hpp"
#include "attn_trace/problem.hpp"
#include "attn_trace/problem_file.hpp"
#include "attn_trace/random.hpp"
#include "commands.hpp"

namespace attn_trace::cli {

namespace {

struct RandomOptions {
    std::size_t n = 4, m = 0, d_model = 0, d_k = 2, d_v = 0;
    int heads = 1, kv_heads = 0;
    std::uint64_t seed = 0;
    std::string dist = "normal";
    std::string mask;
    bool literal = false;
    std::string output = "-";
};

// A generator spec; each matrix gets its own seed so changing one shape keeps the others.
// `std` scales a normal draw (the projections'); 1 is the file's default and is not written.
nlohmann::json random_matrix(std::size_t rows, std::size_t cols, std::uint64_t seed, const std::string& dist, double std = 1.0) {
    nlohmann::json spec = {{"shape", {rows, cols}}, {"seed", seed}, {"dist", dist}};
    if (std != 1.0) spec["std"] = std;
    return {{"random", spec}};
}

// The same numbers the loader would generate from random_matrix(...).
nlohmann::json literal_matrix(std::size_t rows, std::size_t cols, std::uint64_t seed, const std::string& dist, double std = 1.0) {
    RandomDraw how = integers_draw();  // the loader's defaults for each dist
    if (dist != "integers") {
        how = RandomDraw{};
        parse_dist(dist, how.dist);  // --dist is checked by CLI11
        how.std = std;
    }
    std::vector<double> values(rows * cols);
    PortableRandom generator(seed);
    draw(generator, how, values);
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t i = 0; i < rows; ++i) out.push_back(std::vector<double>(values.begin() + static_cast<long>(i * cols), values.begin() + static_cast<long>((i + 1) * cols)));
    return out;
}

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
    random->add_option("--n", o.n, "queries")->capture_default_str();
    random->add_option("--m", o.m, "keys (default n; with --d-model, a source sequence for cross-attention)");
    random->add_option("--d-model", o.d_model, "token width: write X and projections instead of Q, K, V");
    random->add_option("--dk", o.d_k, "query/key width per head")->capture_default_str();
    random->add_option("--dv", o.d_v, "value width per head (default d_k)");
    random->add_option("--heads", o.heads, "query heads")->check(CLI::Range(1, 4096))->capture_default_str();
    random->add_option("--kv-heads", o.kv_heads, "key/value heads (default heads; must divide heads)")->check(CLI::Range(1, 4096));
    // A problem file's seeds run to 2^63 − 1 (docs/PROBLEM.md#matrix-forms), and the last matrix uses seed+4.
    random->add_option("--seed", o.seed, "seed of the first matrix; the others use seed+1, seed+2, ...")
        ->check(CLI::Range(std::uint64_t{0}, static_cast<std::uint64_t>(std::numeric_limits<long>::max()) - 4))
        ->capture_default_str();
    random->add_option("--dist", o.dist, "normal, uniform or integers")->check(CLI::IsMember({"normal", "uniform", "integers"}))->capture_default_str();
    random->add_option("--mask", o.mask, "a mask spec to include (" + mask_string_forms() + R"(, or JSON such as '{"sparse": {"window": 1}}'))");
    random->add_flag("--literal", o.literal, "write the numbers, not generator specs");
    random->add_option("-o,--output", o.output, "output file, - for standard output")->capture_default_str();
    random->callback([&exit_code] {
        if (o.n == 0 || o.d_k == 0) throw InputError(fmt::format("{} 0: expected a whole number of at least 1", o.n == 0 ? "--n" : "--dk"));
        const std::size_t m = o.m ? o.m : o.n, d_v = o.d_v ? o.d_v : o.d_k;
        const int kv_heads = o.kv_heads ? o.kv_heads : o.heads;
        if (o.heads % kv_heads != 0) throw InputError(fmt::format("--kv-heads {} must divide --heads {}", kv_heads, o.heads));
        if (o.literal && static_cast<double>(std::max(o.n, m)) * static_cast<double>(std::max(o.d_model, o.heads * std::max(o.d_k, d_v))) > 1e7)
            throw InputError("--literal writes every number: keep it under 10 million values (leave it out for generator specs)");
        if (!o.mask.empty()) {  // refuse a bad spec, or a matrix mask of another shape, now, not when the file is read
            Problem scores;
            scores.file = fmt::format("--mask {}", o.mask);
            scores.n = o.n;
            scores.m = m;
            scores.masks = parse_mask_option(o.mask, o.n, m, "--mask");
            validate_masks(scores);
        }
        auto matrix = [&](std::size_t rows, std::size_t cols, std::uint64_t seed, double std = 1.0) {
            return o.literal ? literal_matrix(rows, cols, seed, o.dist, std) : random_matrix(rows, cols, seed, o.dist, std);
        };
        // Normal projections drawn with std 1/√d_model, so that X W has entries of about
        // unit size whatever d_model is and the softmax is not saturated from the start
        // (docs/COMMANDS.md#random); uniform and integer draws stay as hand-friendly as asked.
        const double w_std = o.dist == "normal" && o.d_model ? 1.0 / std::sqrt(static_cast<double>(o.d_model)) : 1.0;
        const std::size_t q_width = static_cast<std::size_t>(o.heads) * o.d_k, k_width = static_cast<std::size_t>(kv_heads) * o.d_k,
                          v_width = static_cast<std::size_t>(kv_heads) * d_v;
        nlohmann::ordered_json problem;
        problem["title"] = fmt::format("random problem, seed {}", o.seed);
        if (o.d_model) {
            problem["X"] = matrix(o.n, o.d_model, o.seed);
            if (m != o.n) problem["X_source"] = matrix(m, o.d_model, o.seed + 4);
            problem["W_Q"] = matrix(o.d_model, q_width, o.seed + 1, w_std);
            problem["W_K"] = matrix(o.d_model, k_width, o.seed + 2, w_std);
            problem["W_V"] = matrix(o.d_model, v_width, o.seed + 3, w_std);
        } else {
            problem["Q"] = matrix(o.n, q_width, o.seed);
            problem["K"] = matrix(m, k_width, o.seed + 1);
            problem["V"] = matrix(m, v_width, o.seed + 2);
        }
        if (o.heads > 1) problem["heads"] = o.heads;
        if (kv_heads != o.heads) problem["kv_heads"] = kv_heads;
        if (!o.mask.empty()) {
            const bool is_json = o.mask.find_first_of("{[") == o.mask.find_first_not_of(" \t\n");
            problem["mask"] = is_json ? nlohmann::ordered_json::parse(o.mask) : nlohmann::ordered_json(o.mask);
        }
        const std::string text = problem_file_text(problem);
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
