// The √d_k experiment as an SVG line chart on log-log axes: Var(q·k) against d_k
// (a straight line of slope 1), Var(q·k/√d_k) (flat at 1), and the theory Var = d_k dashed.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn_trace/variance.hpp"

namespace attn_trace {

namespace {

constexpr double width = 640, height = 420, left = 70, right = 170, top = 50, bottom = 60;

struct LogAxis {
    double low, high;  // log10 of the range
    double pixels_from, pixels_to;
    double at(double value) const { return pixels_from + (std::log10(value) - low) / (high - low) * (pixels_to - pixels_from); }
};

std::string polyline(const std::vector<std::pair<double, double>>& points, const std::string& style) {
    std::string xy;
    for (const auto& [x, y] : points) xy += fmt::format("{:.1f},{:.1f} ", x, y);
    return fmt::format("<polyline points=\"{}\" fill=\"none\" {}/>\n", xy, style);
}

}  // namespace

std::string variance_svg(const std::vector<VarianceRow>& rows, const VarianceOptions& o) {
    double smallest = 1, largest = 1, d_min = static_cast<double>(rows.front().d_k), d_max = d_min;
    for (const auto& r : rows) {
        smallest = std::min({smallest, r.variance_scaled, r.variance_unscaled, static_cast<double>(r.d_k)});
        largest = std::max({largest, r.variance_scaled, r.variance_unscaled, static_cast<double>(r.d_k)});
        d_min = std::min(d_min, static_cast<double>(r.d_k));
        d_max = std::max(d_max, static_cast<double>(r.d_k));
    }
    // Whole decades on y; half a step of margin on x so the end points are not on the frame.
    const LogAxis x{std::log10(d_min) - 0.15, std::log10(std::max(d_max, d_min * 2)) + 0.15, left, width - right};
    const LogAxis y{std::floor(std::log10(smallest * 0.8)), std::ceil(std::log10(largest * 1.25)), height - bottom, top};
    std::string out = fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                                  "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n", width, height);
    out += "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
    out += fmt::format("<text x=\"{}\" y=\"24\" font-weight=\"bold\">Var(q · k) for random q, k with N(0, 1) entries ({} pairs, seed {})</text>\n", left,
                       o.samples, o.seed);
    // Grid and ticks: the decades on y, the measured d_k on x.
    for (int e = static_cast<int>(y.low); e <= static_cast<int>(y.high); ++e) {
        const double py = y.at(std::pow(10.0, e));
        out += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#e4e4e4\"/>\n", left, py, width - right, py);
        out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 6, py + 4, fmt::format("{:g}", std::pow(10.0, e)));
    }
    for (const auto& r : rows) {
        const double px = x.at(static_cast<double>(r.d_k));
        out += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#e4e4e4\"/>\n", px, top, px, height - bottom);
        out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px, height - bottom + 18, r.d_k);
    }
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#555\"/>\n", left, top, width - right - left, height - bottom - top);
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">key size d_k (log scale)</text>\n", (left + width - right) / 2, height - 18);
    out += fmt::format("<text x=\"18\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {0})\">variance (log scale)</text>\n", (top + height - bottom) / 2);

    std::vector<std::pair<double, double>> theory, unscaled, scaled;
    for (const auto& r : rows) {
        const double px = x.at(static_cast<double>(r.d_k));
        theory.emplace_back(px, y.at(static_cast<double>(r.d_k)));
        unscaled.emplace_back(px, y.at(r.variance_unscaled));
        scaled.emplace_back(px, y.at(r.variance_scaled));
    }
    out += polyline(theory, "stroke=\"#999\" stroke-width=\"1.5\" stroke-dasharray=\"5,4\"");
    out += polyline(unscaled, "stroke=\"#1f5fa8\" stroke-width=\"2.5\"");
    out += polyline(scaled, "stroke=\"#e07b18\" stroke-width=\"2.5\"");
    for (std::size_t k = 0; k < rows.size(); ++k) {
        out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"#1f5fa8\"><title>d_k {}: Var(q·k) = {:.2f}</title></circle>\n",
                           unscaled[k].first, unscaled[k].second, rows[k].d_k, rows[k].variance_unscaled);
        out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"#e07b18\"><title>d_k {}: Var(q·k/√d_k) = {:.3f}</title></circle>\n",
                           scaled[k].first, scaled[k].second, rows[k].d_k, rows[k].variance_scaled);
    }
    // Legend, right of the plot.
    const double lx = width - right + 14;
    const std::vector<std::pair<std::string, std::string>> legend = {
        {"Var(q · k)", "stroke=\"#1f5fa8\" stroke-width=\"2.5\""}, {"Var(q · k / √d_k)", "stroke=\"#e07b18\" stroke-width=\"2.5\""},
        {"theory: d_k", "stroke=\"#999\" stroke-width=\"1.5\" stroke-dasharray=\"5,4\""}};
    for (std::size_t k = 0; k < legend.size(); ++k) {
        const double ly = top + 14 + 22.0 * static_cast<double>(k);
        out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" {}/>\n", lx, ly, lx + 24, ly, legend[k].second);
        out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", lx + 30, ly + 4, legend[k].first);
    }
    return out + "</svg>\n";
}

}  // namespace attn_trace
