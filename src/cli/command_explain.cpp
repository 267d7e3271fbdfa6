// `explain`: the arithmetic behind one cell or one row of the trace (SPEC §8).
#include <iostream>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/explain.hpp"
#include "commands.hpp"
#include "trace_options.hpp"

namespace attn_trace::cli {

namespace {

struct ExplainCommandOptions {
    TraceOptions trace;
    std::string cell, row;
    std::string format = "text";
};

void add_explain_command(CLI::App& app, int& exit_code) {
    static ExplainCommandOptions o;
    auto* explain_command = app.add_subcommand("explain", "the arithmetic behind one cell or one row of the trace, term by term");
    explain_command->footer(R"(Indices are 0-based, like the row and column numbers of `run` and the JSON "head":
scores[0,2] is query 0 against key 2. --head H (default 0) and --batch B choose the head
and the sequence. Every number is read from the computed trace and rounded to
--precision decimals; each result is the computed value itself.

  --cell scores[i,j]   q_i · k_j as its sum of products, then the scale and the mask
  --cell weights[i,j]  e^(z_ij − max_i) / Σ_i
  --row weights[i]     the masked row, its max, the shifted values, each exponential,
                       the sum, each quotient
  --row out[i]         every term A_ij v_j and their sum

Examples:
  attn-trace explain examples/damaged_on_arrival.json --cell scores[0,2]
  attn-trace explain examples/damaged_on_arrival.json --row weights[0] --mask causal
  attn-trace explain examples/damaged_on_arrival.json --row out[0] --format markdown
  attn-trace explain examples/gqa_8q_2kv.json --cell weights[1,3] --head 5 --format latex --precision 3)");
    add_problem_options(*explain_command, o.trace);
    auto* cell = explain_command->add_option("--cell", o.cell, "one number: scores[i,j] or weights[i,j]");
    auto* row = explain_command->add_option("--row", o.row, "one row: weights[i] or out[i]");
    cell->excludes(row);
    explain_command->add_option("--format", o.format, "text, markdown or latex")->check(CLI::IsMember(explain_formats()))->capture_default_str();
    explain_command->callback([&exit_code] {
        if (o.cell.empty() == o.row.empty()) throw InputError("explain needs one --cell STEP[i,j] or one --row STEP[i], e.g. --cell scores[0,2]");
        // The spec first: a typo is reported before the problem is computed.
        const ExplainTarget target = o.cell.empty() ? parse_row_spec(o.row) : parse_cell_spec(o.cell);
        const Problem problem = load_with_overrides(o.trace);
        const Trace trace = pipeline_full(problem, run_options(o.trace));
        const ExplainOptions options{o.trace.head.value_or(0), o.trace.batch.value_or(0), o.trace.precision, o.format};
        std::cout << explain(trace, problem, target, options);
        exit_code = 0;
    });
}

const CommandRegistration registration{40, add_explain_command};

}  // namespace

}  // namespace attn_trace::cli
