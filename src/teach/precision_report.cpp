// `precision`'s table in text, JSON, Markdown and LaTeX (docs/COMMANDS.md#precision): a row per
// step, per type its largest absolute and relative error against f64, and the step where each
// type first has an inf or NaN that f64 does not.
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn_trace/number_text.hpp"
#include "attn_trace/precision.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/render_table.hpp"

namespace attn_trace {

namespace {

// Three significant digits; an exact 0 stays "0" (f32 often is exact on small integers).
std::string error_text(double x) {
    if (!std::isfinite(x)) return nonfinite_name(x);
    return x == 0 ? "0" : fmt::format("{:.2e}", x);
}

std::string shift_line(bool max_shift) {
    return max_shift ? "softmax with the max shift: exp(z − rowmax(z)), never above 1"
                     : "softmax without the max shift: exp(z) itself, which overflows f16 for z > ln 65504 ≈ 11.09";
}

// "1/0" under "batch/head"; a step of no head (q, concat, final) "1/–", so that its batch
// is not read as a head.
std::string head_text(const std::optional<int>& head, const std::optional<int>& batch) {
    const std::string head_part = head ? std::to_string(*head) : "";
    return batch ? fmt::format("{}/{}", *batch, head ? head_part : "–") : head_part;
}

std::string first_nonfinite_text(const PrecisionRun& run) {
    if (!run.first_nonfinite) return "none";
    return placed_name(*run.first_nonfinite, step_place(run.first_nonfinite_head, run.first_nonfinite_batch, std::nullopt, std::nullopt));
}

bool has_batches(const PrecisionReport& report) {
    for (const auto& step : report.runs.front().steps)
        if (step.batch) return true;
    return false;
}

// The rows of the table as cells: a header row, a row per step, the first-inf/NaN row.
// f64 is left out of the table (it is the reference, all zeros) but kept in JSON.
std::vector<std::vector<std::string>> table_cells(const PrecisionReport& report) {
    const bool batches = has_batches(report);
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> header = {"step", batches ? "batch/head" : "head"};
    for (std::size_t k = 1; k < report.runs.size(); ++k) {
        header.push_back(dtype_name(report.runs[k].dtype) + " abs");
        header.push_back(dtype_name(report.runs[k].dtype) + " rel");
    }
    rows.push_back(header);
    const auto& steps = report.runs.front().steps;
    for (std::size_t s = 0; s < steps.size(); ++s) {
        std::vector<std::string> row = {steps[s].name, head_text(steps[s].head, steps[s].batch)};
        for (std::size_t k = 1; k < report.runs.size(); ++k) {
            row.push_back(error_text(report.runs[k].steps[s].max_abs_error));
            row.push_back(error_text(report.runs[k].steps[s].max_rel_error));
        }
        rows.push_back(row);
    }
    std::vector<std::string> last = {"first inf/NaN", ""};
    for (std::size_t k = 1; k < report.runs.size(); ++k) {
        last.push_back(first_nonfinite_text(report.runs[k]));
        last.push_back("");
    }
    rows.push_back(last);
    return rows;
}

std::string title_of(const PrecisionReport& report) { return "attn-trace precision" + (report.title.empty() ? "" : ": " + report.title); }

}  // namespace

std::string precision_text(const PrecisionReport& report) {
    const auto rows = table_cells(report);
    // The columns fit the steps' rows; the last row's entries each span their type's two
    // columns, and one longer than both widens the second (the entries are right-aligned).
    std::vector<std::size_t> widths(rows.front().size(), 0);
    for (std::size_t r = 0; r + 1 < rows.size(); ++r)
        for (std::size_t c = 0; c < rows[r].size(); ++c) widths[c] = std::max(widths[c], display_width(rows[r][c]));
    const auto& last_row = rows.back();
    for (std::size_t c = 0; c < 2; ++c) widths[c] = std::max(widths[c], display_width(last_row[c]));
    for (std::size_t c = 2; c + 1 < last_row.size(); c += 2)
        widths[c + 1] = std::max(widths[c + 1], display_width(last_row[c]) - std::min(display_width(last_row[c]), widths[c] + 2));
    std::string out = title_of(report) + "\n" + report.problem_line + "\n" + shift_line(report.max_shift) + "\n\n";
    out += "largest error against f64 per step: absolute |x − x₆₄| and relative |x − x₆₄| / |x₆₄|\n";
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const bool last = r + 1 == rows.size();
        std::string line = pad_right(rows[r][0], widths[0]) + "  " + pad_left(rows[r][1], widths[1]);
        // The last row's entries name a step: they run over the two columns of their type.
        for (std::size_t c = 2; c < rows[r].size(); c += last ? 2 : 1)
            line += "  " + (last ? pad_left(rows[r][c], widths[c] + 2 + widths[c + 1]) : pad_left(rows[r][c], widths[c]));
        out += line + "\n";
    }
    return out;
}

std::string precision_json(const PrecisionReport& report) {
    nlohmann::ordered_json dtypes = nlohmann::ordered_json::array();
    for (const auto& run : report.runs) {
        nlohmann::ordered_json steps = nlohmann::ordered_json::array();
        for (const auto& step : run.steps) {
            nlohmann::ordered_json s = {{"name", step.name}};
            if (step.head) s["head"] = *step.head;
            if (step.batch) s["batch"] = *step.batch;
            s["max_abs_error"] = number_json(step.max_abs_error);
            s["max_rel_error"] = number_json(step.max_rel_error);
            steps.push_back(std::move(s));
        }
        nlohmann::ordered_json entry = {{"dtype", dtype_name(run.dtype)},
                                        {"first_nonfinite", run.first_nonfinite ? nlohmann::ordered_json(*run.first_nonfinite) : nlohmann::ordered_json()}};
        if (run.first_nonfinite_head) entry["first_nonfinite_head"] = *run.first_nonfinite_head;
        if (run.first_nonfinite_batch) entry["first_nonfinite_batch"] = *run.first_nonfinite_batch;
        entry["steps"] = std::move(steps);
        dtypes.push_back(std::move(entry));
    }
    const nlohmann::ordered_json out = {{"attn_trace", 1}, {"command", "precision"}, {"title", report.title}, {"max_shift", report.max_shift},
                                        {"dtypes", dtypes}};
    return out.dump() + "\n";
}

std::string precision_markdown(const PrecisionReport& report) {
    const auto rows = table_cells(report);
    std::string out = "## " + markdown_text(title_of(report)) + "\n\n" + markdown_text(report.problem_line) + "\n\n" +
                      markdown_text(shift_line(report.max_shift)) + ".\n\nLargest error against f64 per step (absolute, relative):\n\n";
    for (std::size_t r = 0; r < rows.size(); ++r) {
        out += "|";
        for (const auto& cell : rows[r]) out += " " + markdown_text(cell) + " |";
        out += "\n";
        if (r == 0) {
            out += "|---|---:|";
            for (std::size_t c = 2; c < rows[r].size(); ++c) out += "---:|";
            out += "\n";
        }
    }
    return out;
}

// The table in LaTeX, in two: the absolute errors, then the relative ones, so that the
// columns of every dtype fit a plain article's width. A tabular cannot break across pages,
// so a long table (a step a head) is set as several, each of at most this many steps
// with the header again.
constexpr std::size_t latex_rows_per_table = 36;

std::string precision_latex(const PrecisionReport& report) {
    const auto rows = table_cells(report);
    std::string out = fmt::format("\\noindent\\textbf{{{}}}\\\\\n{}\\\\\n{}.\n", latex_text(title_of(report)), latex_text(report.problem_line),
                                  latex_prose(shift_line(report.max_shift)));
    // Row r of the table of one kind (0 absolute, 1 relative): the step, its head and each
    // dtype's error of that kind; the last row (first inf/NaN) holds one cell a dtype.
    auto line_of = [&](std::size_t r, std::size_t kind) {
        const bool first = r == 0, last = r + 1 == rows.size();
        std::vector<std::string> cells{first || last ? latex_text(rows[r][0]) : "\\texttt{" + latex_text(rows[r][0]) + "}", latex_text(rows[r][1])};
        for (std::size_t c = 2; c < rows[r].size(); c += 2) {
            const std::string& text = rows[r][c + (last ? 0 : kind)];
            cells.push_back(first || last ? latex_text(first ? text.substr(0, text.find(' ')) : text) : "$" + latex_number(text) + "$");
        }
        return fmt::format("{} \\\\\n", fmt::join(cells, " & "));
    };
    const std::string columns = "\\begin{tabular}{l" + std::string(rows.front().size() / 2, 'r') + "}\n";
    for (std::size_t kind = 0; kind < 2; ++kind) {
        out += fmt::format("\n\\medskip\\noindent Largest {} error against f64 per step:\n", kind == 0 ? "absolute" : "relative");
        for (std::size_t first = 1; first + 1 < rows.size(); first += latex_rows_per_table) {
            out += "\n{\\footnotesize\\setlength{\\tabcolsep}{4pt}\n" + columns + line_of(0, kind) + "\\hline\n";
            const std::size_t end = std::min(first + latex_rows_per_table, rows.size() - 1);
            for (std::size_t r = first; r < end; ++r) out += line_of(r, kind);
            if (end + 1 == rows.size()) out += "\\hline\n" + line_of(end, kind);  // the first inf/NaN, under the last steps
            out += "\\end{tabular}\\par}\n";
        }
    }
    return out;
}

}  // namespace attn_trace
