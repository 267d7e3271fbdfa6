// Markdown for worksheets: the problem line, the notes as quotes, then per step
// a heading with its formula and shape and a table labelled with the tokens.
#include <fmt/format.h>

#include "attn_trace/render.hpp"
#include "attn_trace/render_table.hpp"

namespace attn_trace {

namespace {

std::string markdown_heading(const Step& step) {
    std::string where;
    for (const auto& part : step_place(step)) where += ", " + part.key + (part.key == "t" ? " = " : " ") + part.value;
    return fmt::format("### `{}` {} {}{}\n", shown_name(step), markdown_text(defined_as(step_symbol(step.name), step.formula)), shape_string(step.values), where);
}

std::string markdown_table(const Step& step, const RenderOptions& options) {
    const Matrix& m = step.values;
    const CellFormat cell(m, options.precision);
    const auto rows = visible_rows(m.rows(), options.full);
    const auto cols = visible_columns(m.cols(), options.full);
    std::string out = "| |", rule = "|---|";
    for (auto j : cols) {
        out += " " + markdown_text(column_label(step, j)) + " |";
        rule += "---:|";
    }
    out += "\n" + rule + "\n";
    for (auto i : rows) {
        out += "| **" + markdown_text(row_label(step, i)) + "** |";
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
        out = fmt::format("## attn-trace {}{}\n\n{}\n", trace.command, p.title.empty() ? "" : ": " + markdown_text(p.title),
                          markdown_text(describe_problem(p)));
        for (const auto& note : trace.notes) out += "\n> note: " + markdown_text(note_text(note)) + "\n";
    }
    for (const Step* step : selected_steps(trace, options)) out += "\n" + markdown_heading(*step) + "\n" + markdown_table(*step, options);
    for (const auto& [key, value] : trace.numbers) out += fmt::format("\n- {} = {}", key, format_trace_number(value));
    if (!trace.numbers.empty()) out += "\n";
    return out;
}

}  // namespace attn_trace
