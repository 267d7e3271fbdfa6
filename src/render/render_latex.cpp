// LaTeX for worksheets (needs amsmath): per step a bold line with the formula and
// shape, then the values as display maths, labelled with the tokens.
#include <algorithm>
#include <cctype>

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
    // A given has no symbol, and its "formula" is words ("given, columns 0–3"): text, not maths.
    const std::string_view symbol = step_symbol_latex(step.name);
    const std::string defined = symbol.empty() ? latex_text(step.formula) : defined_as(fmt::format("${}$", symbol), latex_formula(step.formula));
    return fmt::format("\\noindent\\textbf{{{}}}{}: {}, shape ${}$\n", latex_text(shown_name(step)), where, defined, shape_string(step.values));
}

// How wide text is in Computer Modern, in ems: m and w and the capitals wide, i, l
// and punctuation narrow, the rest (digits, most lower case) half an em. An
// estimate, kept on the wide side, so that the blocks below fit the page.
double width_in_ems(const std::string& text) {
    double ems = 0;
    for (const char byte : text) {
        const auto c = static_cast<unsigned char>(byte);
        if ((c & 0xC0) == 0x80) continue;  // a UTF-8 continuation byte: its character is counted once
        if (c == 'm' || c == 'w') ems += 0.84;
        else if (c == 'M' || c == 'W' || c >= 0x80) ems += 1.04;
        else if (std::isupper(c)) ems += 0.76;
        else if (c == '.' || c == ',' || c == 'i' || c == 'l' || c == 'j' || c == ' ') ems += 0.3;
        else if (std::isalnum(c)) ems += 0.53;
        else ems += 0.84;  // -, <, %, #, & and the like, in maths or text
    }
    return ems;
}

// The page a block of a matrix must fit: a plain article's text width is 345pt;
// the rest is slack for the estimate above.
constexpr double page_width = 330.0;

// How a matrix is set: at the normal size when it fits whole, else at \footnotesize
// with narrower gaps, in blocks of columns.
struct MatrixSize {
    const char* command;  // the size command, "" for the normal size
    double em, gap;       // the size's em and \arraycolsep, in points
};
constexpr MatrixSize normal_size{"", 10.0, 5.0}, small_size{"\\footnotesize", 8.5, 3.0};

std::string block_heading(const std::vector<std::size_t>& part, std::size_t count) {
    std::vector<std::size_t> shown;
    for (auto j : part)
        if (j != gap) shown.push_back(j);
    if (shown.empty()) return "\\noindent the columns between:\n";
    if (shown.size() == 1) return fmt::format("\\noindent column {} of {}:\n", shown.front(), count);
    return fmt::format("\\noindent columns {}--{} of {}:\n", shown.front(), shown.back(), count);
}

// The matrix as display maths. With token labels (or either kind of label) it is
// an array with the row labels on the left and the column labels over every block;
// without, a bmatrix. A matrix too wide for the page is set smaller and split into
// blocks of columns of about equal size, each headed with the columns it holds.
std::string latex_matrix(const Step& step, const RenderOptions& options) {
    const Matrix& m = step.values;
    const CellFormat cell(m, options.precision);
    const auto rows = visible_rows(m.rows(), options.full);
    const auto cols = visible_columns(m.cols(), options.full);
    const bool labelled = !step.row_labels.empty() || !step.column_labels.empty();
    auto label = [&](std::size_t i, bool column) {
        if (i == gap) return std::string(column ? "\\cdots" : "\\vdots");
        return "\\text{" + latex_text(column ? column_label(step, i) : row_label(step, i)) + "}";
    };
    // Every column is given the width of the widest cell or label, in ems.
    double widest = 1.0, row_labels = 0.0;
    for (auto i : rows)
        for (auto j : cols)
            if (i != gap && j != gap) {
                const std::string text = cell(m(i, j));
                widest = std::max(widest, width_in_ems(text) + (text.find('e') != std::string::npos ? 1.5 : 0.0));  // e-05 is set ×10^{-5}
            }
    if (labelled) {
        for (auto j : cols) widest = std::max(widest, j == gap ? 1.0 : width_in_ems(column_label(step, j)));
        for (auto i : rows) row_labels = std::max(row_labels, i == gap ? 1.0 : width_in_ems(row_label(step, i)));
    }
    // A bmatrix has no label column, but its brackets and (at the normal size) the step's name take about as much.
    const double name = labelled ? 0.0 : width_in_ems(shown_name(step)) + 3.0;
    auto width = [&](const MatrixSize& size, std::size_t columns) {
        return size.em * (row_labels + name + widest * static_cast<double>(columns)) + 2.0 * size.gap * static_cast<double>(columns + 1);
    };
    const MatrixSize& size = width(normal_size, cols.size()) <= page_width ? normal_size : small_size;
    // amsmath's bmatrix holds at most 10 columns (MaxMatrixCols).
    const std::size_t most = labelled ? cols.size() : std::min<std::size_t>(cols.size(), 9);
    std::size_t per_block = 1;
    while (per_block < most && width(size, per_block + 1) <= page_width) ++per_block;
    const std::size_t blocks = (cols.size() + per_block - 1) / per_block;
    per_block = (cols.size() + blocks - 1) / blocks;  // 30 columns at 4 a block: 4 × 6 + 3 × 2, never a block of one left over
    std::string out;
    for (std::size_t first = 0; first < cols.size(); first += per_block) {
        const std::vector<std::size_t> part(cols.begin() + static_cast<long>(first),
                                            cols.begin() + static_cast<long>(std::min(first + per_block, cols.size())));
        if (blocks > 1) out += block_heading(part, m.cols());
        out += fmt::format("{{{}\\setlength{{\\arraycolsep}}{{{}pt}}\n\\[\n", size.command, size.gap);
        if (labelled) {
            out += fmt::format("\\begin{{array}}{{r|{}}}\n", std::string(part.size(), 'r'));
            std::vector<std::string> heads{""};
            for (auto j : part) heads.push_back(label(j, true));
            out += fmt::format("{} \\\\ \\hline\n", fmt::join(heads, " & "));
        } else {
            out += fmt::format("\\mathrm{{{}}} = \\begin{{bmatrix}}\n", latex_text(shown_name(step)));
        }
        for (auto i : rows) {
            std::vector<std::string> cells;
            if (labelled) cells.push_back(label(i, false));
            for (auto j : part) cells.push_back(i == gap && j == gap ? "\\ddots" : i == gap ? "\\vdots" : j == gap ? "\\cdots" : latex_number(cell(m(i, j))));
            out += fmt::format("{} \\\\\n", fmt::join(cells, " & "));
        }
        out += labelled ? "\\end{array}\n\\]\n}\n" : "\\end{bmatrix}\n\\]\n}\n";
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
        std::string notes;
        for (const auto& note : trace.notes) notes += "\n\\noindent\\emph{note: " + latex_prose(note_text(note)) + "}\n";
        if (!notes.empty()) out += latex_ragged_prose(notes);
    }
    // Each step is one paragraph: its heading line runs straight into the display (a line break
    // there would leave an empty, underfull line), and no page breaks inside it, so a
    // heading never stays alone at a page's foot (LaTeX breaks no page just before a display).
    for (const Step* step : steps) out += "\n{\\interlinepenalty=10000\n" + latex_heading(*step) + latex_matrix(*step, options) + "\\par}\n";
    for (const auto& [key, value] : trace.numbers) out += fmt::format("\n\\noindent {} $= {}$\n", latex_text(key), format_trace_number(value));
    return out;
}

}  // namespace attn_trace
