// Markdown for worksheets: the problem line, the notes as quotes, then per step
// a heading with its formula (as maths) and shape and a table labelled with the tokens.
#include <fmt/format.h>

#include "attn_trace/render.hpp"
#include "attn_trace/render_table.hpp"

namespace attn_trace {

const std::vector<std::string>& math_style_names() {
    static const std::vector<std::string> names = {"dollars", "github"};
    return names;
}

std::string markdown_math(const std::string& latex, MathStyle style, bool display) {
    // pandoc reads $…$ as maths only without a space inside either dollar.
    const std::size_t first = latex.find_first_not_of(" \n"), last = latex.find_last_not_of(" \n");
    const std::string math = first == std::string::npos ? "" : latex.substr(first, last - first + 1);
    switch (style) {
        case MathStyle::dollars: return display ? "$$\n" + math + "\n$$" : "$" + math + "$";
        case MathStyle::github: return display ? "```math\n" + math + "\n```" : "$`" + math + "`$";
    }
    return math;  // a value outside the enum
}

namespace {

std::string markdown_heading(const Step& step, MathStyle style) {
    std::string where;
    for (const auto& part : step_place(step)) where += ", " + part.key + (part.key == "t" ? " = " : " ") + part.value;
    // A given has no symbol, and its "formula" is words ("given, columns 0–3"): text, not maths.
    if (step_symbol_latex(step.name).empty())
        return fmt::format("### `{}` {} {}{}\n", shown_name(step), markdown_text(step.formula), shape_string(step.values), where);
    std::vector<TextPiece> pieces = text_pieces(step.formula, true);
    // The step's symbol defines it, as in every format (docs/NOTATION.md#headings): with the
    // formula's first mathematics when the formula starts with it, else followed by its words.
    const std::string symbol(step_symbol_latex(step.name));
    std::string shown;
    if (!pieces.empty() && pieces.front().math) pieces.front().text = symbol + " = " + pieces.front().text;
    else shown = markdown_math(symbol, style, false) + (pieces.empty() ? "" : " ");
    // Only the mathematics is maths: a word in $…$ would be set as a product of letters.
    for (const auto& piece : pieces) shown += piece.math ? markdown_math(piece.text, style, false) : markdown_text(piece.text);
    return fmt::format("### `{}` {} {}{}\n", shown_name(step), shown, shape_string(step.values), where);
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
    for (const Step* step : selected_steps(trace, options)) out += "\n" + markdown_heading(*step, options.math) + "\n" + markdown_table(*step, options);
    for (const auto& [key, value] : trace.numbers) out += fmt::format("\n- {} = {}", key, format_trace_number(value));
    if (!trace.numbers.empty()) out += "\n";
    return out;
}

}  // namespace attn_trace
