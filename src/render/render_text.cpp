// The trace for people: a header per step (name, formula, shape), then an
// aligned table with token labels; large matrices keep their first and last
// rows and columns around a "…" unless --full.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn_trace/render.hpp"

namespace attn_trace {

namespace {

// Summaries keep the first `head` and last `tail` indices when there are more than `limit`.
struct Window {
    std::size_t limit, head, tail;
};
constexpr Window row_window{16, 6, 3};
constexpr Window column_window{12, 5, 3};

// The indices to print; npos marks the "…" gap.
std::vector<std::size_t> visible_indices(std::size_t count, Window window, bool full) {
    std::vector<std::size_t> out;
    if (full || count <= window.limit) {
        for (std::size_t i = 0; i < count; ++i) out.push_back(i);
        return out;
    }
    for (std::size_t i = 0; i < window.head; ++i) out.push_back(i);
    out.push_back(std::string::npos);
    for (std::size_t i = count - window.tail; i < count; ++i) out.push_back(i);
    return out;
}

std::size_t display_width(const std::string& text) {
    // Count code points, not bytes: labels and "…" may be UTF-8.
    return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string pad_left(const std::string& text, std::size_t width) {
    const std::size_t w = display_width(text);
    return w >= width ? text : std::string(width - w, ' ') + text;
}
std::string pad_right(const std::string& text, std::size_t width) {
    const std::size_t w = display_width(text);
    return w >= width ? text : text + std::string(width - w, ' ');
}

struct Colors {
    bool on;
    std::string paint(const std::string& text, const char* code) const { return on ? fmt::format("\x1b[{}m{}\x1b[0m", code, text) : text; }
    std::string header(const std::string& t) const { return paint(t, "1;36"); }
    std::string dim(const std::string& t) const { return paint(t, "2"); }
    std::string masked(const std::string& t) const { return paint(t, "31"); }
    std::string note(const std::string& t) const { return paint(t, "33"); }
};

bool all_integers(const Matrix& m) {
    return std::all_of(m.data().begin(), m.data().end(), [](double x) { return !std::isfinite(x) || (std::fabs(x) < 1e15 && x == std::floor(x)); });
}

std::string step_title(const Step& step) {
    std::string where;
    if (step.batch) where += fmt::format("  batch {}", *step.batch);
    if (step.head) where += fmt::format("  head {}", *step.head);
    if (step.t) where += fmt::format("  t = {}", *step.t);
    if (step.tile) where += fmt::format("  tile [{}, {}]", (*step.tile)[0], (*step.tile)[1]);
    return fmt::format("{}  {}  {}{}", step.name, step.formula, shape_string(step.values), where);
}

std::string render_matrix(const Step& step, const RenderOptions& options, const Colors& colors) {
    const Matrix& m = step.values;
    const bool integers = all_integers(m);
    auto cell = [&](double x) { return integers && std::isfinite(x) ? fmt::format("{}", static_cast<long long>(x)) : format_number(x, options.precision); };
    const auto rows = visible_indices(m.rows(), row_window, options.full);
    const auto cols = visible_indices(m.cols(), column_window, options.full);
    auto row_label = [&](std::size_t i) { return i == std::string::npos ? "…" : (i < step.row_labels.size() ? step.row_labels[i] : std::to_string(i)); };
    auto col_label = [&](std::size_t j) { return j == std::string::npos ? "…" : (j < step.column_labels.size() ? step.column_labels[j] : std::to_string(j)); };

    // Column widths from the visible cells and labels.
    std::size_t label_width = 0;
    for (auto i : rows) label_width = std::max(label_width, display_width(row_label(i)));
    std::vector<std::size_t> widths;
    for (auto j : cols) {
        std::size_t w = display_width(col_label(j));
        if (j != std::string::npos)
            for (auto i : rows)
                if (i != std::string::npos) w = std::max(w, display_width(cell(m(i, j))));
        widths.push_back(w);
    }
    std::string out = std::string(label_width, ' ');
    for (std::size_t c = 0; c < cols.size(); ++c) out += "  " + colors.dim(pad_left(col_label(cols[c]), widths[c]));
    out += "\n";
    for (auto i : rows) {
        out += colors.dim(pad_right(row_label(i), label_width));
        for (std::size_t c = 0; c < cols.size(); ++c) {
            std::string text = (i == std::string::npos || cols[c] == std::string::npos) ? "…" : cell(m(i, cols[c]));
            const bool blocked = text == "-inf" || (text == "0" && (step.name == "weights" || step.name == "exp"));
            text = pad_left(text, widths[c]);
            out += "  " + (blocked ? colors.masked(text) : text);
        }
        out += "\n";
    }
    return out;
}

}  // namespace

std::string render_text(const Trace& trace, const RenderOptions& options) {
    const Colors colors{options.color};
    const auto& p = trace.problem;
    std::string out;
    out += colors.header(fmt::format("attn-trace {}{}", trace.command, p.title.empty() ? "" : ": " + p.title)) + "\n";
    out += fmt::format("{}n = {} queries, m = {} keys, {}{} head{}{}, d_k = {}, d_v = {}, scale = {}, mask = {}, {}, {}\n",
                       p.batch > 1 ? fmt::format("batch of {}, ", p.batch) : "", p.n, p.m,
                       p.d_model ? fmt::format("d_model = {}, ", p.d_model) : "", p.heads, p.heads == 1 ? "" : "s",
                       p.kv_heads != p.heads ? fmt::format(" ({} KV head{})", p.kv_heads, p.kv_heads == 1 ? "" : "s") : "", p.d_k, p.d_v,
                       fmt::format("{:.6g}", p.scale), p.mask, p.dtype, p.backend);
    for (const auto& note : trace.notes) out += colors.note("note: " + note) + "\n";
    for (const Step* step : selected_steps(trace, options)) {
        out += "\n" + colors.header(step_title(*step)) + "\n";
        out += render_matrix(*step, options, colors);
    }
    for (const auto& [key, value] : trace.numbers) out += fmt::format("\n{} = {:.6g}", key, value);
    if (!trace.numbers.empty()) out += "\n";
    return out;
}

}  // namespace attn_trace
