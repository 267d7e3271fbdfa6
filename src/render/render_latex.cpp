// LaTeX for worksheets (needs amsmath): per step a bold line with the formula and
// shape, the row and column labels, and the values as a bmatrix.
#include <algorithm>

#include <fmt/format.h>

#include "attn_trace/render.hpp"
#include "attn_trace/render_table.hpp"

namespace attn_trace {

std::string latex_number(const std::string& text) {
    if (text == "-inf") return "-\\infty";
    if (text == "inf") return "\\infty";
    if (text == "nan") return "\\mathrm{NaN}";
    const auto e = text.find('e');
    if (e == std::string::npos) return text;
    return fmt::format("{}\\times10^{{{}}}", text.substr(0, e), std::stoi(text.substr(e + 1)));
}

namespace {

std::string latex_heading(const Step& step) {
    std::string where;  // t and the tile's indices in math mode
    for (const auto& part : step_place(step))
        where += part.key == "t" ? ", $t = " + part.value + "$" : part.key == "tile" ? ", tile $" + part.value + "$" : ", " + part.key + " " + part.value;
    return fmt::format("\\noindent\\textbf{{{}}}{}: {}, shape ${}$\\\\\n", latex_text(shown_name(step)), where,
                       defined_as(step_symbol_latex(step.name).empty() ? "" : fmt::format("${}$", step_symbol_latex(step.name)), latex_formula(step.formula)),
                       shape_string(step.values));
}

std::string latex_labels(const Step& step, const std::vector<std::size_t>& rows, const std::vector<std::size_t>& cols) {
    if (step.row_labels.empty() && step.column_labels.empty()) return "";
    auto join = [&](const std::vector<std::size_t>& indices, bool columns) {
        std::vector<std::string> names;
        for (auto i : indices) names.push_back(latex_text(columns ? column_label(step, i) : row_label(step, i)));
        return fmt::format("{}", fmt::join(names, ", "));
    };
    std::string out = "\\noindent rows: " + join(rows, false);
    if (!step.column_labels.empty()) out += "; columns: " + join(cols, true);
    return out + "\n";
}

// How many columns of cells `width` characters wide one \footnotesize bmatrix
// holds within a plain article's text width (about 330pt: 4.2pt a character, 6pt
// between columns): nine of -0.1234, so a summary (5 + … + 3) stays whole; wider
// numbers or --full split the matrix into blocks of columns.
std::size_t columns_per_matrix(std::size_t width) {
    return std::clamp<std::size_t>(static_cast<std::size_t>(330.0 / (4.2 * static_cast<double>(width) + 6.0)), 1, 9);
}

std::string latex_matrix(const Step& step, const RenderOptions& options) {
    const Matrix& m = step.values;
    const CellFormat cell(m, options.precision);
    const auto rows = visible_rows(m.rows(), options.full);
    const auto cols = visible_columns(m.cols(), options.full);
    std::string out = latex_labels(step, rows, cols);
    std::size_t widest = 1;
    for (auto i : rows)
        for (auto j : cols)
            if (i != gap && j != gap) {
                const std::string text = cell(m(i, j));
                widest = std::max(widest, text.size() + (text.find('e') != std::string::npos ? 3 : 0));  // e-05 is set ×10^{-5}
            }
    const std::size_t per_matrix = columns_per_matrix(widest);
    for (std::size_t first = 0; first < cols.size(); first += per_matrix) {
        const std::vector<std::size_t> part(cols.begin() + static_cast<long>(first),
                                            cols.begin() + static_cast<long>(std::min(first + per_matrix, cols.size())));
        if (cols.size() > per_matrix) out += fmt::format("\\noindent columns {}--{}:\n", part.front() == gap ? part[1] : part.front(),
                                                          part.back() == gap ? part[part.size() - 2] : part.back());
        // Matrices that fit at the normal size (5pt a character, 10pt between columns,
        // 50pt for the name) keep their name in the display; wider ones need the room.
        const bool wide = static_cast<double>(part.size()) * (5.0 * static_cast<double>(widest) + 10.0) + 50.0 > 330.0;
        out += wide ? "{\\footnotesize\\setlength{\\arraycolsep}{3pt}\n\\[\n\\begin{bmatrix}\n"
                    : fmt::format("\\[\n\\mathrm{{{}}} = \\begin{{bmatrix}}\n", latex_text(shown_name(step)));
        for (auto i : rows) {
            std::vector<std::string> cells;
            for (auto j : part) cells.push_back(i == gap && j == gap ? "\\ddots" : i == gap ? "\\vdots" : j == gap ? "\\cdots" : latex_number(cell(m(i, j))));
            out += fmt::format("{} \\\\\n", fmt::join(cells, " & "));
        }
        out += wide ? "\\end{bmatrix}\n\\]\n}\n" : "\\end{bmatrix}\n\\]\n";
    }
    return out;
}

}  // namespace

std::string render_latex(const Trace& trace, const RenderOptions& options) {
    const auto& p = trace.problem;
    const auto steps = selected_steps(trace, options);
    std::string out = fmt::format("% attn-trace {}: needs \\usepackage{{amsmath}}\n", trace.command);
    if (options.header) {
        out += fmt::format("\\noindent\\textbf{{attn-trace {}{}}}\\\\\n{}\n", trace.command, p.title.empty() ? "" : ": " + latex_text(p.title),
                           latex_text(describe_problem(p)));
        for (const auto& note : trace.notes) out += "\n\\noindent\\emph{note: " + latex_prose(note_text(note)) + "}\n";
    }
    for (const Step* step : steps) out += "\n" + latex_heading(*step) + latex_matrix(*step, options);
    for (const auto& [key, value] : trace.numbers) out += fmt::format("\n\\noindent {} $= {}$\n", latex_text(key), format_trace_number(value));
    return out;
}

}  // namespace attn_trace
