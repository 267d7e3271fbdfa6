// explain: parse the target, compute only what it reads, and hand it to the
// explanation of its trace (run, decode or tiled).
#include "attn_trace/explain.hpp"

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "attn_trace/attention_parts.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/render_html.hpp"
#include "attn_trace/nearest_word.hpp"
#include "explain_run.hpp"
#include "explain_grad.hpp"
#include "explain_stepwise.hpp"

namespace attn_trace {

namespace {

const std::vector<StepName> row_steps = {StepName::weights, StepName::out};

// The steps a cell of which explain explains: run's, decode's (⟦t⟧), tiled's (⟦tile⟧)
// and grad's gradients. Not permute's two outputs, the Jacobian of grad ⟦row⟧ or the
// tiled backward's lse, delta and tiles (docs/COMMANDS.md#explain).
std::vector<std::string> cell_steps() {
    std::vector<std::string> names;
    for (const StepInfo& info : step_table()) {
        const bool forward = (info.commands & (by_run | by_decode | by_tiled)) != 0;
        if (forward || (is_gradient(info.id) && info.id != StepName::grad_p && info.id != StepName::grad_s)) names.push_back(info.name);
    }
    return names;
}

ExplainTarget parse_spec(const std::string& text, bool row) {
    const std::string option = row ? "⟦row⟧" : "⟦cell⟧";
    static const std::regex cell_pattern(R"(\s*([A-Za-z_]+)\s*\[\s*(\d+)\s*,\s*(\d+)\s*\]\s*)");
    static const std::regex row_pattern(R"(\s*([A-Za-z_]+)\s*\[\s*(\d+)\s*\]\s*)");
    std::smatch match;
    if (!std::regex_match(text, match, row ? row_pattern : cell_pattern)) {
        const bool other_form = std::regex_match(text, match, row ? cell_pattern : row_pattern);
        throw InputError(fmt::format("{} '{}': expected {} with 0-based indices, e.g. {}{}", option, text, row ? "STEP[i]" : "STEP[i,j]",
                                     row ? "weights[1]" : "scores[0,2]",
                                     other_form ? fmt::format(" (for {} use {})", row ? "one cell" : "a whole row", row ? "⟦cell⟧" : "⟦row⟧") : ""));
    }
    const auto step = find_step(match[1].str());
    const std::vector<std::string> cells = cell_steps();
    const bool explained = step && (row ? std::find(row_steps.begin(), row_steps.end(), *step) != row_steps.end()
                                        : std::find(cells.begin(), cells.end(), step_name(*step)) != cells.end());
    if (!explained) {
        const std::string allowed = row ? fmt::format("{}", fmt::join(row_steps, ", ")) : fmt::format("{}", fmt::join(cells, ", "));
        const std::string near = step ? "" : did_you_mean(match[1].str(), step_names());
        throw InputError(fmt::format("{} '{}': cannot explain step '{}'{} this way: {} explains {}", option, text, match[1].str(), near, option, allowed));
    }
    ExplainTarget target;
    target.step = *step;
    target.spec = text;
    try {
        target.row = std::stoul(match[2]);
        if (!row) target.column = std::stoul(match[3]);
    } catch (const std::out_of_range&) {
        throw InputError(fmt::format("{} '{}': the index is too large", option, text));
    }
    return target;
}

void check_format(const ExplainOptions& options) {
    if (!accepts(for_explain, options.format))
        throw InputError(fmt::format("explain writes text, markdown, latex or html, not '{}'", options.format));
}

// The explanation in its format; html is a page of its own.
std::string written(const ExplainDocument& document, const ExplainOptions& options) {
    const Format format = options.format;
    const std::string text = render_explanation(document, format, options.math);
    if (format != Format::html) return text;
    return html_page("attn-trace explain: " + document.heading, "sheet", "<main>\n" + text + "</main>\n");
}

// The query rows a run explanation reads: row i, or one row for the key-indexed
// steps (k, v, k_rot read every key anyway).
QueryRows rows_for(const Problem& problem, const ExplainTarget& target) {
    if (key_indexed_step(target.step) || problem.n == 0) return {0, std::min<std::size_t>(1, problem.n)};
    if (target.row >= problem.n)
        throw InputError(fmt::format("'{}': row {} is out of range: the problem has {} quer{} (rows 0 to {}; indices are 0-based)", target.spec,
                                     target.row, problem.n, problem.n == 1 ? "y" : "ies", problem.n - 1));
    return {target.row, 1};
}

}  // namespace

ExplainTarget parse_cell_spec(const std::string& text) { return parse_spec(text, false); }
ExplainTarget parse_row_spec(const std::string& text) { return parse_spec(text, true); }

std::string explain(const Trace& trace, const Problem& problem, const ExplainTarget& target, const ExplainOptions& options) {
    check_format(options);
    return written(explain_run_step(trace, problem, target, options, 0), options);
}

std::string explain_problem(const Problem& given, const RunOptions& run, const ExplainTarget& target, const ExplainOptions& options,
                            const ExplainSource& source) {
    check_format(options);
    // In a half type the explanations multiply the inputs as the type stores them, as the pipelines do.
    const std::optional<Problem> stored = stored_in(given, run.dtype);
    const Problem& problem = stored ? *stored : given;
    if (source.t && source.tile) throw InputError("explain: ⟦t⟧ (a decode step) and ⟦tile⟧ (a tiled step) exclude each other");
    const std::size_t batch = checked_batch(problem, options);
    if (source.t) return written(explain_decode_step(problem, run, target, options, source, batch), options);
    if (source.tile) return written(explain_tiled_step(problem, run, target, options, source, batch), options);
    if (is_gradient(target.step)) {  // the backward pass: its trace and the forward one it reads
        const Trace grad = pipeline_grad(problem, run, {});
        return written(explain_grad_step(grad, pipeline_full(problem, run), problem, target, options), options);
    }
    const QueryRows rows = rows_for(problem, target);
    const Trace trace = pipeline_full_rows(problem, run, batch, rows);
    return written(explain_run_step(trace, problem, target, options, rows.first), options);
}

double explain_bytes(const Problem& p, const ExplainSource& source) {
    const double heads = p.heads, n = p.n, m = p.m, d_k = p.d_k, d_v = p.d_v, kv = p.kv_heads;
    // k and v (and their per-head copies, RoPE) over every key.
    const double keys = 3 * m * kv * (d_k + d_v) + heads * m * (d_k + d_v);
    if (source.t)  // decode: every head's q, k, v (n and m rows), the outputs, one step's caches and rows
        return 8 * (keys + heads * n * (d_k + d_v) + 2 * kv * m * (d_k + d_v) + 4 * heads * m);
    if (source.tile) {  // tiled: the block's tiles up to kt
        const double Br = std::min<double>(source.tiled.block_q, n), Bc = std::min<double>(source.tiled.block_k, m);
        const double tiles = std::min<double>(static_cast<double>(source.tile->at(1)) + 1, (m + Bc - 1) / Bc);
        return 8 * (keys + heads * tiles * (Br * Bc + Br * (3 + d_v)) + heads * Br * m);
    }
    // run: one query row: about ten (1, m) steps per head
    return 8 * (keys + 10 * heads * m);
}

}  // namespace attn_trace
