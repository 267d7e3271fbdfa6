// Markdown for worksheets: the problem line, the notes as quotes, then per step
// a heading with its formula and shape and a table labelled with the tokens.
#include <fmt/format.h>

#include "attn_trace/render.hpp"
#include "render_table.hpp"

namespace attn_trace {

namespace {

// A table cell may not contain "|" (it would end the cell).
std::string markdown_cell(const std::string& text) {
    std::string out;
    for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
}

std::string markdown_heading(const Step& step) {
    std::string where;
    if (step.batch) where += fmt::format(", batch {}", *step.batch);
    if (step.head) where += fmt::format(", head {}", *step.head);
    if (step.t) where += fmt::format(", t = {}", *step.t);
    if (step.tile) where += fmt::format(", tile [{}, {}]", (*step.tile)[0], (*step.tile)[1]);
    return fmt::format("### `{}` = {} {}{}\n", step.name, step.formula, shape_string(step.values), where);
}

std::string markdown_table(const Step& step, const RenderOptions& options) {
    const Matrix& m = step.values;
    const CellFormat cell(m, options.precision);
    const auto rows = visible_rows(m.rows(), options.full);
    const auto cols = visible_columns(m.cols(), options.full);
    std::string out = "| |", rule = "|---|";
    for (auto j : cols) {
        out += " " + markdown_cell(column_label(step, j)) + " |";
        rule += "---:|";
    }
    out += "\n" + rule + "\n";
    for (auto i : rows) {
        out += "| **" + markdown_cell(row_label(step, i)) + "** |";
        for (auto j : cols) out += " " + (i == gap || j == gap ? std::string("…") : cell(m(i, j))) + " |";
        out += "\n";
    }
    return out;
}

}  // namespace

std::string render_markdown(const Trace& trace, const RenderOptions& options) {
    const auto& p = trace.problem;
    std::string out;
    if (options.header) {
        out = fmt::format("## attn-trace {}{}\n\n{}\n", trace.command, p.title.empty() ? "" : ": " + p.title, describe_problem(p));
        for (const auto& note : trace.notes) out += "\n> note: " + note + "\n";
    }
    for (const Step* step : selected_steps(trace, options)) out += "\n" + markdown_heading(*step) + "\n" + markdown_table(*step, options);
    for (const auto& [key, value] : trace.numbers) out += fmt::format("\n- {} = {:.6g}", key, value);
    if (!trace.numbers.empty()) out += "\n";
    return out;
}

}  // namespace attn_trace
