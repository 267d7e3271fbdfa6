// `explain`: the arithmetic behind one cell or one row of the trace (docs/COMMANDS.md#explain).
#include <array>
#include <iostream>
#include <optional>
#include <regex>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/explain.hpp"
#include "commands.hpp"
#include "budget_options.hpp"
#include "trace_options.hpp"

namespace attn_trace::cli {

namespace {

struct ExplainCommandOptions {
    TraceOptions trace;
    std::string cell, row;
    Format format = Format::text;
    std::optional<long long> t;
    long long prefill = 0, block_q = TiledOptions{}.block_q, block_k = TiledOptions{}.block_k;  // as tiled
    std::string tile;
};

// "qb,kt" -> {qb, kt}
std::array<std::size_t, 2> parse_tile(const std::string& text) {
    static const std::regex pattern(R"(\s*(\d+)\s*,\s*(\d+)\s*)");
    std::smatch match;
    if (!std::regex_match(text, match, pattern))
        throw InputError(fmt::format("--tile '{}': expected QB,KT (the query block and the key tile, 0-based), e.g. --tile 1,0", text));
    try {
        return {std::stoul(match[1]), std::stoul(match[2])};
    } catch (const std::out_of_range&) {
        throw InputError(fmt::format("--tile '{}': the index is too large", text));
    }
}

void add_explain_command(CLI::App& app, int& exit_code) {
    static ExplainCommandOptions o;
    auto* explain_command = app.add_subcommand("explain", "the arithmetic behind one cell or one row of the trace, term by term");
    explain_command->footer(R"(Indices are 0-based, like the row and column numbers of `run` and the JSON "head":
scores[0,2] is query 0 against key 2. --head H (default 0) and --batch B choose the head
and the sequence. Every number is the computed one, rounded to --precision decimals.
explain computes only the rows it needs (one query row; one decode step; one query
block): memory O((n + m) · d), never the n · m scores. At n = m = 65 536, d_k = 64 a
cell takes about 0.4 s and 176 MB, 104 MB of it reading the problem.

Every step of run can be explained, cell by cell (--cell STEP[i,j]):
  x, x_source, q, k, v   x_i · column of W + bias, term by term (or "given")
  q_rot, k_rot           the rotation of the pair: angle, cos, sin, the two products
  scores, scaled, capped, masked   q_i · k_j as its sum of products, then scale, cap, mask
  mask                   which rule hides or biases it: causal alignment, window,
                         padding, lengths, explicit matrix, ALiBi slope · distance
  row_max, exp, row_sum  max_j z_ij; e^(z_ij − max_i); Σ_j e^(z_ij − max_i)   (row_max[i,0])
  weights                e^(z_ij − max_i) / Σ_i
  out                    Σ_j A_ij v_jc, every term
  concat, final          which head's out column; concat row · W_O column + b_O
and whole rows (--row STEP[i]): weights[i] (the whole softmax), out[i] (every A_ij v_j).
Decode steps with --t T (and --prefill P as decode has it): k_cache, v_cache, masked,
weights, out of step t, indexed as that step prints them. Tiled steps with
--tile QB,KT (and --block-q, --block-k as tiled has them): masked, m, l, u, rescale of
that tile, with the recurrence from the previous tile.

Examples:
  attn-trace explain examples/damaged_on_arrival.json --cell scores[0,2]
  attn-trace explain examples/damaged_on_arrival.json --row weights[0] --mask causal
  attn-trace explain examples/damaged_on_arrival.json --row out[0] --format markdown
  attn-trace explain examples/damaged_on_arrival.json --row weights[1] --format markdown --math github
  attn-trace explain examples/gqa_8q_2kv.json --cell weights[1,3] --head 5 --format latex --precision 3
  attn-trace explain examples/damaged_on_arrival.json --cell weights[2,1] --format html > weights21.html
  attn-trace explain tests/golden/rope_half.json --cell q_rot[2,1]
  attn-trace explain examples/damaged_on_arrival.json --cell mask[0,2] --mask causal
  attn-trace explain examples/damaged_on_arrival.json --cell weights[0,1] --t 2 --prefill 1
  attn-trace explain examples/damaged_on_arrival.json --cell l[0,0] --tile 0,1 --block-q 2 --block-k 2)");
    add_problem_options(*explain_command, o.trace);
    auto* cell = explain_command->add_option("--cell", o.cell, "one number: STEP[i,j], e.g. scores[0,2], q[1,0], mask[2,0], l[0,0]");
    auto* row = explain_command->add_option("--row", o.row, "one row: weights[i] or out[i]");
    cell->excludes(row);
    add_format_option(*explain_command, o.format, formats_of(for_explain), "text, markdown, latex or html (a page of its own)");
    add_math_option(*explain_command, o.trace.output.math);
    add_standalone_flag(*explain_command, o.trace.output.standalone);
    auto* t = explain_command->add_option("--t", o.t, "a decode step: explain decode's k_cache, v_cache, masked, weights or out at step T");
    auto* tile = explain_command->add_option("--tile", o.tile, "a tiled step: explain tiled's masked, m, l, u or rescale at tile QB,KT");
    t->excludes(tile);
    auto* prefill = explain_command->add_option("--prefill", o.prefill, "with --t: the first P queries as one causal block, as decode --prefill")
                        ->capture_default_str();
    auto* block_q = explain_command->add_option("--block-q", o.block_q, "with --tile: Br, query rows per block, as tiled")->capture_default_str();
    auto* block_k = explain_command->add_option("--block-k", o.block_k, "with --tile: Bc, keys per tile, as tiled")->capture_default_str();
    // Nothing silent: an option that would change nothing is refused.
    prefill->needs(t);
    block_q->needs(tile);
    block_k->needs(tile);
    explain_command->callback([&exit_code] {
        if (o.cell.empty() == o.row.empty()) throw InputError("explain needs one --cell STEP[i,j] or one --row STEP[i], e.g. --cell scores[0,2]");
        // The spec first: a typo is reported before the problem is computed.
        const ExplainTarget target = o.cell.empty() ? parse_row_spec(o.row) : parse_cell_spec(o.cell);
        const ExplainOptions options{o.trace.output.head.value_or(0), o.trace.output.batch.value_or(0), o.trace.output.precision, o.format, math_style(o.trace.output.math, o.format)};
        ExplainSource source;
        if (o.t) source.t = whole_number_option("--t", *o.t, 0);
        if (!o.tile.empty()) source.tile = parse_tile(o.tile);
        source.decode.prefill = whole_number_option("--prefill", o.prefill, 0);
        source.tiled = TiledOptions{whole_number_option("--block-q", o.block_q, 1), whole_number_option("--block-k", o.block_k, 1)};
        auto request = trace_request<ExplainRequest>(o.trace);
        request.target = target;
        request.options = options;
        request.source = source;
        require_standalone_format(o.format, o.trace.output.standalone);  // before anything is computed
        std::cout << written_document(attn_trace::explain_command(load_with_overrides(o.trace), request), o.format, o.trace.output.standalone);
        exit_code = 0;
    });
}

const CommandRegistration registration{40, add_explain_command};

}  // namespace

}  // namespace attn_trace::cli
