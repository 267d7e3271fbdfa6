// A per-head step as an SVG heatmap (the weights unless --steps names scores,
// scaled, capped or masked; decode's and tiled's weights put together whole): one
// panel per head (query rows × key columns), token labels, the numbers inside
// cells large enough to hold them, masked cells hatched grey with a ×, and a
// colour scale on the right (0 to 1 for the weights).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/render_html.hpp"
#include "attn_trace/render_table.hpp"
#include "attn_trace/whole_weights.hpp"

namespace attn_trace {

namespace {

// An SVG of a million rectangles is no use to anyone: past this, show fewer heads
// (--head, --batch) or a smaller problem.
constexpr std::size_t max_svg_cells = 250000;
constexpr int panels_per_row = 4;
constexpr double char_width = 7.5;  // 12px sans-serif, on average, with room to spare
constexpr double gutter = 30.0;

std::string hex(Rgb c) { return fmt::format("#{:02x}{:02x}{:02x}", c.r, c.g, c.b); }

// Sizes shared by every panel: cells shrink as the matrices grow.
struct Layout {
    double cell, left, top, panel_width, panel_height;
    bool numbers;
};

Layout layout_for(const std::vector<HeatmapPanel>& panels, int precision) {
    std::size_t rows = 1, cols = 1, row_label_width = 1, column_label_width = 1;
    for (const auto& p : panels) {
        const Step& s = *p.values;
        rows = std::max(rows, s.values.rows());
        cols = std::max(cols, s.values.cols());
        for (std::size_t i = 0; i < s.values.rows(); ++i) row_label_width = std::max(row_label_width, display_width(row_label(s, i)));
        for (std::size_t j = 0; j < s.values.cols(); ++j) column_label_width = std::max(column_label_width, display_width(column_label(s, j)));
    }
    Layout l;
    l.cell = std::clamp(480.0 / static_cast<double>(std::max(rows, cols)), 4.0, 48.0);
    // "0.1243" needs about precision + 2 characters of 6px at 10px font.
    l.numbers = l.cell >= 6.0 * (precision + 2) + 4;
    l.left = char_width * static_cast<double>(row_label_width) + 16;
    l.top = 24 + char_width * 0.75 * static_cast<double>(column_label_width) + 10;  // titles, then labels at 45°
    l.panel_width = l.left + l.cell * static_cast<double>(cols) + gutter;
    l.panel_height = l.top + l.cell * static_cast<double>(rows) + gutter;
    return l;
}

// Labels 12px high overlap once cells are narrower than that: then only every
// k-th row and column is labelled (the cell's <title> still names each one).
std::size_t label_stride(double cell) { return static_cast<std::size_t>(std::ceil(13.0 / cell)); }

std::string svg_panel(const HeatmapPanel& panel, const Layout& l, double x0, double y0, int precision) {
    const Step& s = *panel.values;
    const Matrix& w = s.values;
    const std::size_t stride = label_stride(l.cell);
    std::string out = fmt::format("<g transform=\"translate({:.1f},{:.1f})\">\n", x0, y0);
    out += fmt::format("<text x=\"{:.1f}\" y=\"14\" class=\"title\">{}</text>\n", l.left, html_escape(panel.title()));
    for (std::size_t j = 0; j < w.cols(); j += stride) {
        const double x = l.left + (static_cast<double>(j) + 0.5) * l.cell, y = l.top - 6;
        out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" transform=\"rotate(-45 {:.1f} {:.1f})\" class=\"key\">{}</text>\n", x, y, x, y,
                           html_escape(column_label(s, j)));
    }
    for (std::size_t i = 0; i < w.rows(); ++i) {
        const double y = l.top + static_cast<double>(i) * l.cell;
        if (i % stride == 0)
            out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"query\">{}</text>\n", l.left - 6, y + l.cell / 2 + 4,
                               html_escape(row_label(s, i)));
        for (std::size_t j = 0; j < w.cols(); ++j) {
            const double x = l.left + static_cast<double>(j) * l.cell;
            const bool masked = panel.masked(i, j);
            out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"><title>{} → {}: {}</title></rect>\n",
                               x, y, l.cell, l.cell, masked ? "url(#masked)" : hex(weight_colour(panel.shade(w(i, j)))), html_escape(row_label(s, i)),
                               html_escape(column_label(s, j)), masked ? "masked" : format_number(w(i, j), precision));
            if (!l.numbers) continue;
            const std::string text = masked ? "×" : format_number(w(i, j), precision);
            out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"{}\">{}</text>\n", x + l.cell / 2, y + l.cell / 2 + 4,
                               masked ? "mask" : panel.shade(w(i, j)) > 0.55 ? "light" : "dark", text);
        }
    }
    out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" class=\"frame\"/>\n", l.left, l.top,
                       l.cell * static_cast<double>(w.cols()), l.cell * static_cast<double>(w.rows()));
    return out + "</g>\n";
}

// The colour scale's gradient, bottom (0) to top (1), for <defs>.
std::string svg_scale_gradient() {
    std::string out = "<linearGradient id=\"scale\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n";
    for (int k = 0; k <= 10; ++k) out += fmt::format("<stop offset=\"{:.1f}\" stop-color=\"{}\"/>\n", k / 10.0, hex(weight_colour(k / 10.0)));
    return out + "</linearGradient>\n";
}

// A vertical bar from the panel's high end (top) to its low end with ticks, and the masked swatch.
std::string svg_colour_scale(const HeatmapPanel& panel, double x, double y, double height) {
    std::string out = fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"title\">{}</text>\n", x, y - 10, shown_name(*panel.values));
    out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"16\" height=\"{:.1f}\" fill=\"url(#scale)\" stroke=\"#555\"/>\n", x, y, height);
    for (int k = 0; k <= 4; ++k) {
        const double ty = y + height * (1 - k / 4.0);
        out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333\"/>\n", x + 16, ty, x + 20, ty);
        out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\">{}</text>\n", x + 23, ty + 4, format_rounded(panel.low + (panel.high - panel.low) * k / 4.0, 2));
    }
    out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"16\" height=\"16\" fill=\"url(#masked)\" stroke=\"#555\"/>\n", x, y + height + 14);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\">masked</text>\n", x + 23, y + height + 26);
    return out;
}

}  // namespace

void check_svg_cells(std::size_t cells) {
    if (cells > max_svg_cells)
        throw InputError(fmt::format("⟦svg⟧ would draw {} cells (the limit is {}): choose one head with ⟦head⟧, one sequence with ⟦batch⟧, "
                                     "or a smaller problem", cells, max_svg_cells));
}

std::string render_weights_svg(const Trace& trace, const RenderOptions& options) {
    const std::optional<Trace> whole = whole_weights(trace);  // decode's and tiled's weights, put together
    const auto panels = heatmap_panels(whole ? *whole : trace, options, "⟦svg⟧");
    std::size_t cells = 0;
    for (const auto& p : panels) cells += p.values->values.rows() * p.values->values.cols();
    check_svg_cells(cells);
    const Layout l = layout_for(panels, options.precision);
    const int columns = std::min<int>(panels_per_row, static_cast<int>(panels.size()));
    const int rows = (static_cast<int>(panels.size()) + panels_per_row - 1) / panels_per_row;
    const double scale_x = columns * l.panel_width, scale_height = std::min(200.0, rows * l.panel_height - l.top - 60);
    const auto& p = trace.problem;
    const std::string what = panels.front().values->name == StepName::weights ? "attention weights" : step_name(panels.front().values->name);
    const std::string heading = fmt::format("{}{}: rows read columns", what, p.title.empty() ? "" : " — " + p.title);
    const double width = std::max(scale_x + 90, 20 + char_width * static_cast<double>(display_width(heading))), height = rows * l.panel_height + 40;
    std::string out = fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" viewBox=\"0 0 {:.0f} {:.0f}\" "
                                  "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n", width, height, width, height);
    out += "<defs>\n<pattern id=\"masked\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
           "<rect width=\"6\" height=\"6\" fill=\"#e6e6e6\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#b0b0b0\" stroke-width=\"2\"/></pattern>\n";
    out += svg_scale_gradient() + "</defs>\n";
    out += "<style>text{font-size:12px;fill:#222} .title{font-weight:bold} .query{text-anchor:end} .key{text-anchor:start}"
           " .tick{font-size:11px} .dark,.light,.mask{font-size:10px;text-anchor:middle} .light{fill:#fff} .mask{fill:#777}"
           " .frame{fill-opacity:0;stroke:#555;stroke-width:1}</style>\n";
    out += "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
    out += svg_colour_scale(panels.front(), scale_x, l.top + 40, std::max(60.0, scale_height));
    out += fmt::format("<text x=\"10\" y=\"20\" class=\"title\">{}</text>\n", html_escape(heading));
    for (std::size_t k = 0; k < panels.size(); ++k)
        out += svg_panel(panels[k], l, static_cast<double>(k % panels_per_row) * l.panel_width, 30 + static_cast<double>(k / panels_per_row) * l.panel_height,
                         options.precision);
    return out + "</svg>\n";
}

}  // namespace attn_trace
