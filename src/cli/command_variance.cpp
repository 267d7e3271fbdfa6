// `variance`: the √d_k experiment (docs/COMMANDS.md#variance).
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/variance.hpp"
#include "commands.hpp"

namespace attn_trace::cli {

namespace {

struct VarianceCommandOptions {
    VarianceOptions experiment;
    std::string svg;
    Format format = Format::text;
};

void add_variance_command(CLI::App& app, int& exit_code) {
    static VarianceCommandOptions o;
    auto* variance = app.add_subcommand("variance", "the √d_k experiment: Var(q·k), softmax saturation and gradient size, with and without scaling");
    variance->footer(R"(q and k have independent N(0, 1) entries (the project's portable generator: the same
numbers on every machine). Var(q·k) is measured over --samples pairs; the softmax figures
over --queries rows of --keys keys each: the mean largest weight, the share of rows with a
weight above 0.99, and the mean Frobenius norm of the softmax Jacobian diag(p) − p pᵀ.
The defaults take a few seconds; smaller --samples and --queries run faster.

Examples:
  attn-trace variance
  attn-trace variance --dk 4,16,64,256,1024 --samples 20000 --keys 32 --queries 2000 --seed 0 --svg variance.svg
  attn-trace variance --dk 8,32 --samples 2000 --queries 200 --format json)");
    variance->add_option("--dk", o.experiment.d_k, "key sizes, comma-separated")->delimiter(',')->capture_default_str();
    variance->add_option("--samples", o.experiment.samples, "q·k pairs for the variance")->capture_default_str();
    variance->add_option("--keys", o.experiment.keys, "keys per softmax row")->capture_default_str();
    variance->add_option("--queries", o.experiment.queries, "softmax rows")->capture_default_str();
    variance->add_option("--seed", o.experiment.seed, "seed of the random numbers")->capture_default_str();
    variance->add_option("--svg", o.svg, "also write the log-log chart of the variances to this file");
    add_format_option(*variance, o.format, formats_of(for_variance), "text or json");
    variance->callback([&exit_code] {
        const auto rows = measure_variance(o.experiment);
        if (!o.svg.empty()) {
            std::ofstream out(o.svg);
            if (!out || !(out << variance_svg(rows, o.experiment))) throw InputError(fmt::format("{}: cannot write the file", o.svg));
        }
        std::cout << (o.format == Format::json ? variance_json(rows, o.experiment) : variance_text(rows, o.experiment));
        exit_code = 0;
    });
}

const CommandRegistration registration{65, add_variance_command};

}  // namespace

}  // namespace attn_trace::cli
