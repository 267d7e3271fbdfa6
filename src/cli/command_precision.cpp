// `precision`: f64, f32, f16 and bf16 side by side (docs/COMMANDS.md#precision).
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/report_commands.hpp"
#include "commands.hpp"
#include "budget_options.hpp"
#include "trace_options.hpp"

namespace attn_trace::cli {

namespace {

struct PrecisionCommandOptions {
    TraceOptions problem;  // PROBLEM, --mask, --scale, --backend, --empty-rows, --train, --eval, --max-memory
    bool no_max_shift = false;
    std::string svg;
};

void add_precision_command(CLI::App& app, int& exit_code) {
    static PrecisionCommandOptions o;
    auto* precision = app.add_subcommand("precision", "f64, f32, f16 and bf16 side by side: each step's largest error and the first inf or NaN");
    precision->footer(R"(The problem runs four times, once per type, each as `run --dtype` computes it
(docs/PROBLEM.md#dtype-half-precision). Per step: the largest absolute error against f64 and
the largest relative one (over cells whose f64 value is finite and not 0), and for each type
the first step with an inf or NaN that f64 does not have. Overflow is traced, not refused.
--no-max-shift exponentiates the masked scores without subtracting the row max: f16's exp(z)
overflows for z > ln 65504 ≈ 11.09, which the max shift prevents.

Examples:
  attn-trace precision examples/half_overflow.json
  attn-trace precision examples/half_overflow.json --no-max-shift
  attn-trace precision examples/half_overflow.json --no-max-shift --svg precision.svg
  attn-trace precision examples/damaged_on_arrival.json --format json)");
    precision->add_option("PROBLEM", o.problem.problem_path, "problem file (JSON; its keys: docs/PROBLEM.md), or - for standard input")->required();
    precision->add_option("--mask", o.problem.overrides.mask, "mask, overriding the file (as run's --mask)");
    precision->add_option("--scale", o.problem.overrides.scale, "auto (1/sqrt(d_k)), none (1) or a number, overriding the file");
    precision->add_option("--backend", o.problem.backend, "cpu or cuda")->capture_default_str();
    add_empty_rows_and_dropout_options(*precision, o.problem);
    precision->add_flag("--no-max-shift", o.no_max_shift, "softmax as exp(z) / Σ exp(z), without subtracting the row max: what overflows");
    precision->add_option("--svg", o.svg, "also write the chart of each step's error by type to this file");
    add_format_option(*precision, o.problem.output.format, formats_of(for_precision), "text, json, markdown or latex");
    add_memory_option(*precision, o.problem.budget);
    add_standalone_flag(*precision, o.problem.output.standalone);
    precision->callback([&exit_code] {
        const Format format = o.problem.output.format;
        require_standalone_format(format, o.problem.output.standalone);  // before anything is computed
        const Problem problem = load_with_overrides(o.problem);
        PrecisionRequest request;
        request.backend = o.problem.backend;
        request.budget = o.problem.budget;
        request.max_shift = !o.no_max_shift;
        const PrecisionReport report = precision_command(problem, request);
        if (!o.svg.empty()) {
            std::ofstream out(o.svg);
            if (!out || !(out << precision_svg(report))) throw InputError(fmt::format("{}: cannot write the file", o.svg));
        }
        std::cout << written_document(render_precision(report, format), format, o.problem.output.standalone);
        exit_code = 0;
    });
}

const CommandRegistration registration{66, add_precision_command};

}  // namespace

}  // namespace attn_trace::cli
