// The trace for people: a header per step (name, formula, shape), then an
// aligned table with token labels; large matrices keep their first and last
// rows and columns around a "…" unless --full.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn_trace/number_text.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/render_table.hpp"

namespace attn_trace {

namespace {

struct Colors {
    bool on;
    std::string paint(const std::string& text, const char* code) const { return on ? fmt::format("\x1b[{}m{}\x1b[0m", code, text) : text; }
    std::string header(const std::string& t) const { return paint(t, "1;36"); }
    std::string dim(const std::string& t) const { return paint(t, "2"); }
    std::string masked(const std::string& t) const { return paint(t, "31"); }
    std::string note(const std::string& t) const { return paint(t, "33"); }
};

// Where a run in f32 or a half type lost a cell against f64 (docs/PROBLEM.md#dtype-half-precision),
// the cell carries a mark, and a line under the table says what the marks mean.
const char* loss_mark(CellLoss loss) { return loss == CellLoss::overflowed ? "↑" : "↓"; }

std::string loss_legend(const Step& step, const Colors& colors) {
    const std::size_t overflowed = step.overflowed_cells, underflowed = step.underflowed_cells;
    std::string out;
    const auto cells = [](std::size_t count) { return fmt::format("{} cell{}", grouped(static_cast<std::uint64_t>(count)), count == 1 ? "" : "s"); };
    if (overflowed) out += colors.masked(fmt::format("↑ {} overflowed to ±inf where f64 is finite", cells(overflowed))) + "\n";
    if (underflowed) out += colors.masked(fmt::format("↓ {} fell to 0 where f64 is not 0", cells(underflowed))) + "\n";
    // The step kept the places of the first lost_cells_kept only (trace.hpp): the rest carry no mark.
    if (overflowed + underflowed > step.lost_cells.size())
        out += colors.masked(fmt::format("marked: the first {} of them in row-major order; the others are lost too but not marked",
                                         grouped(static_cast<std::uint64_t>(step.lost_cells.size())))) + "\n";
    return out;
}

std::string render_matrix(const Step& step, const RenderOptions& options, const Colors& colors) {
    const Matrix& m = step.values;
    const CellFormat format(m, options.precision);
    const bool marked = !step.lost_cells.empty();
    const auto cell = [&](std::size_t i, std::size_t j) {
        if (!marked) return format(m(i, j));
        const auto loss = step.loss_at(i, j);
        return format(m(i, j)) + (loss ? loss_mark(*loss) : " ");
    };
    const auto rows = visible_rows(m.rows(), options.full);
    const auto cols = visible_columns(m.cols(), options.full);
    // A marked table's cells end in the mark's column: its headers end a column earlier, over the digits.
    const auto header = [&](std::size_t j) { return column_label(step, j) + (marked && j != gap ? " " : ""); };

    // Column widths from the visible cells and labels.
    std::size_t label_width = 0;
    for (auto i : rows) label_width = std::max(label_width, display_width(row_label(step, i)));
    std::vector<std::size_t> widths;
    for (auto j : cols) {
        std::size_t w = display_width(header(j));
        if (j != gap)
            for (auto i : rows)
                if (i != gap) w = std::max(w, display_width(cell(i, j)));
        widths.push_back(w);
    }
    std::string out = std::string(label_width, ' ');
    for (std::size_t c = 0; c < cols.size(); ++c) out += "  " + colors.dim(pad_left(header(cols[c]), widths[c]));
    out += "\n";
    for (auto i : rows) {
        out += colors.dim(pad_right(row_label(step, i), label_width));
        for (std::size_t c = 0; c < cols.size(); ++c) {
            const bool in_gap = i == gap || cols[c] == gap;
            const std::string text = pad_left(in_gap ? "…" : cell(i, cols[c]), widths[c]);
            const bool highlighted = !in_gap && (is_blocked_cell(step, m(i, cols[c])) || (marked && step.loss_at(i, cols[c])));
            out += "  " + (highlighted ? colors.masked(text) : text);
        }
        out += "\n";
    }
    return out + loss_legend(step, colors);
}

// A sparse pattern as a picture
// (docs/FAMILY.md#sparse-patterns-which-pairs-are-scored-at-all): █ where a pair is
// scored, · where it is not. Past 64 rows or columns each character stands for a block of
// cells, ▒ for a block with some scored.
std::string pattern_grid(const Step& mask) {
    const Matrix& m = mask.values;
    const std::size_t most = 64, row_step = (m.rows() + most - 1) / most, col_step = (m.cols() + most - 1) / most;
    std::string out = row_step > 1 || col_step > 1
                          ? fmt::format("pattern (each character {} × {} cells: █ all scored, ▒ some, · none)\n", row_step, col_step)
                          : "pattern (█ scored, · not scored)\n";
    for (std::size_t i0 = 0; i0 < m.rows(); i0 += row_step) {
        for (std::size_t j0 = 0; j0 < m.cols(); j0 += col_step) {
            std::size_t scored = 0, cells = 0;
            for (std::size_t i = i0; i < std::min(m.rows(), i0 + row_step); ++i)
                for (std::size_t j = j0; j < std::min(m.cols(), j0 + col_step); ++j, ++cells) scored += std::isfinite(m(i, j)) ? 1 : 0;
            out += scored == 0 ? "·" : scored == cells ? "█" : "▒";
        }
        out += "\n";
    }
    return out;
}

bool has_number(const Trace& trace, const std::string& key) {
    return std::any_of(trace.numbers.begin(), trace.numbers.end(), [&](const auto& number) { return number.first == key; });
}

}  // namespace

std::string describe_problem(const TraceSummary& p) {
    return fmt::format("{}n = {} quer{}, m = {} key{}, {}{} head{}{}, d_k = {}, d_v = {}, scale = {}, mask = {}, {}, {}",
                       p.batch > 1 ? fmt::format("batch of {}, ", p.batch) : "", p.n, p.n == 1 ? "y" : "ies", p.m, p.m == 1 ? "" : "s",
                       p.d_model ? fmt::format("d_model = {}, ", p.d_model) : "", p.heads, p.heads == 1 ? "" : "s",
                       p.kv_heads != p.heads ? fmt::format(" ({} KV head{})", p.kv_heads, p.kv_heads == 1 ? "" : "s") : "", p.d_k, p.d_v,
                       fmt::format("{:.6g}", p.scale), p.mask, p.dtype, p.backend);
}

std::string render_step_text(const Step& step, const RenderOptions& options) {
    const Colors colors{options.color};
    // A run in f32 or a half type says how far each step is from f64's.
    const std::string error =
        step.max_abs_error_vs_f64 ? colors.dim(fmt::format("  max |error| vs f64 = {}", format_trace_number(*step.max_abs_error_vs_f64))) : "";
    return colors.header(step_title(step)) + error + "\n" + render_matrix(step, options, colors);
}

std::string render_text(const Trace& trace, const RenderOptions& options) {
    const Colors colors{options.color};
    const auto& p = trace.problem;
    std::string out;
    out += colors.header(fmt::format("attn-trace {}{}", trace.command, p.title.empty() ? "" : ": " + p.title)) + "\n";
    out += describe_problem(p) + "\n";
    for (const auto& note : trace.notes) out += colors.note("note: " + note_text(note)) + "\n";
    bool pattern_drawn = !has_number(trace, "scored_pairs");
    for (const Step* step : selected_steps(trace, options)) {
        if (step->name == StepName::mask && !pattern_drawn) {
            out += "\n" + pattern_grid(*step);
            pattern_drawn = true;
        }
        out += "\n" + render_step_text(*step, options);
    }
    for (const auto& [key, value] : trace.numbers) out += fmt::format("\n{} = {}", key, format_trace_number(value));
    if (!trace.numbers.empty()) out += "\n";
    return out;
}

}  // namespace attn_trace
