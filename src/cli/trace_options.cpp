#include "trace_options.hpp"
#include "commands.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/pitfalls.hpp"
#include "attn_trace/split_list.hpp"

namespace attn_trace::cli {

namespace {


void write_file(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    if (!out || !(out << text)) throw InputError(fmt::format("{}: cannot write the file", path));
}

}  // namespace

bool use_color(const std::string& setting) {
    if (setting == "always") return true;
    if (setting == "never") return false;
    // auto: a terminal, and NO_COLOR (https://no-color.org) unset or empty.
    const char* no_color = std::getenv("NO_COLOR");
    return isatty(fileno(stdout)) && (no_color == nullptr || *no_color == '\0');
}

void add_problem_options(CLI::App& command, TraceOptions& o) {
    command.add_option("PROBLEM", o.problem_path, "problem file (JSON; its keys: docs/PROBLEM.md), or - for standard input")->required();
    command.add_option("--mask", o.overrides.mask, "mask, overriding the file: " + mask_string_forms() + R"(, or JSON such as '{"sparse": {"window": 1, "global": [0]}}')");
    command.add_option("--scale", o.overrides.scale, "auto (1/sqrt(d_k)), none (1) or a number, overriding the file");
    command.add_option("--dtype", o.overrides.dtype, "f64, f32, f16 or bf16 (default: the file's \"dtype\", else f64)")->check(CLI::IsMember({"f64", "f32", "f16", "bf16"}));
    command.add_option("--backend", o.backend, "cpu or cuda")->capture_default_str();
    command.add_option("--head", o.output.head, "only this head's per-head steps (0-based)");
    command.add_option("--batch", o.output.batch, "only this sequence of a batch (0-based)");
    command.add_option("--precision", o.output.precision, "decimals in text tables")->check(CLI::Range(0, 17))->capture_default_str();
    command.add_flag("--allow-nonfinite", o.allow_nonfinite, "trace how a NaN or infinity in an input spreads, instead of refusing it");
    add_empty_rows_and_dropout_options(command, o);
    add_memory_option(command, o.budget);
}

void add_empty_rows_and_dropout_options(CLI::App& command, TraceOptions& o) {
    command.add_option("--empty-rows", o.overrides.empty_rows, "a query row that can read no key: error, zero or nan");
    auto* train = command.add_flag("--train", o.train, "apply the problem's dropout (train mode: keep and dropped steps)");
    command.add_flag("--eval", o.eval, "do not apply the problem's dropout (eval mode, the default)")->excludes(train);
}

void add_math_option(CLI::App& command, std::optional<MathStyle>& math) {
    // The check runs before the callback, so the name is always one of the list.
    command
        .add_option_function<std::string>(
            "--math",
            [&math](const std::string& name) {
                const auto& names = math_style_names();
                math = static_cast<MathStyle>(std::find(names.begin(), names.end(), name) - names.begin());
            },
            "Markdown's maths: dollars ($…$ and $$…$$: GitHub, pandoc, Jupyter, KaTeX) or github (GitHub's $`…`$ and ```math blocks)")
        ->check(CLI::IsMember(math_style_names()))
        ->default_str(math_style_names().front());
}

void add_standalone_flag(CLI::App& command, bool& standalone) {
    command.add_flag("--standalone", standalone, "with --format latex: a whole document (article, amsmath) that pdflatex compiles as it is");
}

MathStyle math_style(const std::optional<MathStyle>& math, Format format) {
    if (math && format != Format::markdown)
        throw InputError(fmt::format("--math {} sets how Markdown writes maths: it needs --format markdown, not {}",
                                     math_style_names()[static_cast<std::size_t>(*math)], format));
    return math.value_or(MathStyle::dollars);
}

void add_trace_options(CLI::App& command, TraceOptions& o) {
    add_problem_options(command, o);
    add_format_option(command, o.output.format, formats_of(for_trace),
                      fmt::format("{} (csv writes one step: choose it with --steps; html a page to explore, each cell explained on a click)",
                                  fmt::join(formats_of(for_trace), ", ")));
    add_math_option(command, o.output.math);
    add_standalone_flag(command, o.output.standalone);
    command.add_option("--steps", o.steps, "only these steps, comma-separated (e.g. scores,weights,out)");
    command.add_flag("--full", o.output.full, "print every row and column of large matrices");
    command.add_option("--color", o.color, "auto (a terminal without NO_COLOR), always or never")
        ->check(CLI::IsMember({"auto", "always", "never"}))
        ->capture_default_str();
    // permute's trace holds the two outputs, never a matrix of scores or weights to draw.
    if (command.get_name() != "permute") {
        // decode and tiled hold only their weights whole, put together from pieces (docs/COMMANDS.md#run).
        const std::string& name = command.get_name();
        const std::string drawn = name == "grad"                       ? "the forward weights"
                                  : name == "decode" || name == "tiled" ? "the whole weights (put together from the " + name + " steps)"
                                                                        : "the weights (or the first of scores, scaled, capped, masked in --steps)";
        command.add_flag("--heatmap", o.output.heatmap, fmt::format("draw {} of each head as a coloured grid instead of the tables", drawn));
        command.add_option("--svg", o.svg, fmt::format("also write {} of each head as an SVG heatmap to this file", drawn));
    }
    add_output_option(command, o.budget);
    // A pitfall is a variation of the full computation: decode and tiled have no use for it.
    if (command.get_name() == "run")
        command.add_option("--pitfall", o.pitfall, fmt::format("show a mistake next to the right computation: {}", fmt::join(pitfall_names(), ", ")))
            ->check(CLI::IsMember(pitfall_names()));
}

Problem load_with_overrides(const TraceOptions& o) {
    ProblemOverrides overrides = o.overrides;
    if (o.train || o.eval) overrides.train = o.train;
    ProblemSource source;
    source.path = o.problem_path;
    source.allow_nonfinite = o.allow_nonfinite;
    return load_with_overrides(source, overrides);
}

RunOptions run_options(const TraceOptions& o, const Problem& problem) { return {problem.dtype.value_or(Dtype::f64), o.backend}; }

void print_result(const TraceResult& result, const TraceOptions& o) {
    OutputRequest output = o.output;
    output.color = use_color(o.color);
    output.budget = o.budget;
    if (!o.steps.empty()) output.steps = split_list(o.steps, ',');
    const std::string text = render_trace_output(result, output);
    // The SVG before anything is printed: a bad --svg path fails with nothing written.
    if (!o.svg.empty()) write_file(o.svg, render_trace_svg(result, output));
    std::cout << text;
}

}  // namespace attn_trace::cli
