// A per-head step (the weights unless --steps names scores, scaled, capped or
// masked; decode's and tiled's weights put together whole) as a terminal picture: one grid per head, query rows × key columns, each
// cell coloured by its value (256-colour background) with the number inside.
// Without colour, a shading character after each number keeps the picture, and
// masked cells show "×" either way.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn_trace/render.hpp"
#include "attn_trace/render_table.hpp"
#include "attn_trace/whole_weights.hpp"

namespace attn_trace {

namespace {

// The nearest colour of xterm's 6×6×6 cube (indices 16–231): 256 colours work in
// more terminals than 24-bit colour does.
int cube_index(Rgb c) {
    auto level = [](int v) { return v < 48 ? 0 : v < 115 ? 1 : (v - 35) / 40; };
    return 16 + 36 * level(c.r) + 6 * level(c.g) + level(c.b);
}

// position: a value's place on the colour scale, 0…1
std::string shade(double position) {
    static const char* shades[] = {" ", "░", "▒", "▓", "█"};
    return shades[std::clamp(static_cast<int>(std::lround(position * 4)), 0, 4)];
}

std::string heatmap_panel(const HeatmapPanel& panel, const RenderOptions& options) {
    const Step& step = *panel.values;
    const Matrix& w = step.values;
    // Every cell is as wide as the widest number, so the grid stays square-ish.
    std::size_t width = 1;
    for (double x : w.data()) width = std::max(width, display_width(format_number(x, options.precision)));
    const std::size_t cell_width = width + (options.color ? 2 : 1);
    const auto rows = visible_rows(w.rows(), options.full);
    const auto cols = visible_columns(w.cols(), options.full);
    std::size_t label_width = 0;
    for (auto i : rows) label_width = std::max(label_width, display_width(row_label(step, i)));

    std::string out = fmt::format("{}  {}  {}  (rows read columns; × = masked){}\n", shown_name(step), panel.title(), shape_string(w),
                                  fmt::format("; colour scale {} … {}", format_rounded(panel.low, options.precision),
                                              format_rounded(panel.high, options.precision)));
    out += std::string(label_width, ' ');
    for (auto j : cols) {
        // A label wider than its cell is cut, visibly ("extrao…"), so the grid stays
        // square and aligned; the row labels and the tables keep it whole
        // (docs/COMMANDS.md#options-shared-by-run-decode-and-tiled).
        out += " " + pad_left(fit_width(column_label(step, j), cell_width), cell_width);
    }
    out += "\n";
    for (auto i : rows) {
        out += pad_right(row_label(step, i), label_width);
        for (auto j : cols) {
            out += " ";
            if (i == gap || j == gap) {
                out += pad_left("…", cell_width);
                continue;
            }
            const double x = w(i, j);
            if (panel.masked(i, j)) {
                const std::string text = pad_left("×", cell_width - (options.color ? 1 : 0)) + (options.color ? " " : "");
                out += options.color ? fmt::format("\x1b[48;5;252;38;5;244m{}\x1b[0m", text) : text;
            } else if (options.color) {
                // Dark cells get white digits, light cells black ones.
                const int foreground = panel.shade(x) > 0.55 ? 231 : 16;
                out += fmt::format("\x1b[48;5;{};38;5;{}m {} \x1b[0m", cube_index(weight_colour(panel.shade(x))), foreground,
                                   pad_left(format_number(x, options.precision), width));
            } else {
                out += pad_left(format_number(x, options.precision), width) + shade(panel.shade(x));
            }
        }
        out += "\n";
    }
    return out;
}

}  // namespace

std::string render_heatmap(const Trace& trace, const RenderOptions& options) {
    std::string out;
    const std::optional<Trace> whole = whole_weights(trace);  // decode's and tiled's weights, put together
    for (const auto& panel : heatmap_panels(whole ? *whole : trace, options, "⟦heatmap⟧")) out += (out.empty() ? "" : "\n") + heatmap_panel(panel, options);
    if (!options.color) out += "\nshading: ' ' the scale's low end, '░' 1/4, '▒' 1/2, '▓' 3/4, '█' the high end\n";
    return out;
}

}  // namespace attn_trace
