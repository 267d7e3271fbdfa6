// `bench --roofline FILE` (docs/COMMANDS.md#bench): each measured setting as a point under
// the machine's two roofs, log-log. The memory roof rises as intensity × bandwidth up to
// the ridge point (peak / bandwidth), the compute roof is flat after it; a point's height
// under the roof above it is the share of the bound it reached.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "bench_report.hpp"

namespace attn_trace::cli {

namespace {

// "fast n=8192", "fast backward n=4096", "fast decode T=32768".
std::string point_label(const BenchResult& r) {
    if (r.mode == BenchMode::decode) return fmt::format("{} decode T={}", r.impl, r.m);
    return fmt::format("{}{} n={}", r.impl, r.mode == BenchMode::backward ? " backward" : "", r.n);
}

}  // namespace

std::string bench_roofline_svg(const BenchConfig& c, const BenchRun& run) {
    const double width = 820, height = 474, left = 80, right = 40, top = 64, bottom = 50;
    std::string svg = svg_chart_head(width, height, left, "roofline: attainable GFLOP/s against arithmetic intensity", bench_setting_text(c));
    if (!run.roofs) return svg + fmt::format(R"(<text x="{}" y="200">no roofs measured</text>)" "\n</svg>\n", left);
    const double peak = run.roofs->compute_gflops(c.dtype), bandwidth = run.roofs->copy_gb_per_s, ridge = peak / bandwidth;
    // The axes span the ridge and every point, a decade of margin around the ridge.
    double i_low = ridge / 10, i_high = ridge * 10, g_low = peak / 100;
    for (const auto& r : run.results)
        if (r.roofline && r.gflops > 0) {
            i_low = std::min(i_low, r.roofline->intensity / 2);
            i_high = std::max(i_high, r.roofline->intensity * 2);
            g_low = std::min(g_low, r.gflops / 2);
        }
    const double x0 = std::floor(std::log10(i_low)), x1 = std::ceil(std::log10(i_high));
    const double y0 = std::floor(std::log10(g_low)), y1 = std::ceil(std::log10(peak * 2));
    const LogPlot plot{width, height, left, right, top, bottom, x0, x1, y0, y1};
    auto px = [&](double intensity) { return plot.px(intensity); };
    auto py = [&](double gflops) { return plot.py(gflops); };
    svg += plot.frame("");
    for (double e = x0; e <= x1; e += 1)
        svg += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle">{:g}</text>)" "\n", px(std::pow(10, e)), height - bottom + 18, std::pow(10, e));
    svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">arithmetic intensity, FLOP per byte (log scale)</text>)" "\n",
                       left + (width - left - right) / 2, height - 10);
    svg += fmt::format(R"svg(<text x="16" y="{}" transform="rotate(-90 16 {})" text-anchor="middle">GFLOP/s (log scale)</text>)svg" "\n",
                       top + (height - top - bottom) / 2, top + (height - top - bottom) / 2);

    // The roofs: intensity × bandwidth from the left edge (or where it enters the plot) to the ridge, then the peak.
    const double i_start = std::max(std::pow(10, x0), std::pow(10, y0) / bandwidth);
    svg += fmt::format(R"(<polyline points="{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}" fill="none" stroke="#444" stroke-width="2"/>)" "\n",
                       px(i_start), py(i_start * bandwidth), px(ridge), py(peak), px(std::pow(10, x1)), py(peak));
    svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" fill="#444">multiply-add peak {:.1f} GFLOP/s</text>)" "\n", px(ridge) + 6, py(peak) - 6, peak);
    // The bandwidth's label along its slope, halfway (in log terms) between where it enters the plot and the ridge.
    const double i_label = std::sqrt(i_start * ridge), slope = std::atan2(py(ridge * bandwidth) - py(i_start * bandwidth), px(ridge) - px(i_start));
    svg += fmt::format(R"svg(<text x="{0:.1f}" y="{1:.1f}" fill="#444" text-anchor="middle" transform="rotate({2:.1f} {0:.1f} {1:.1f})">copy bandwidth {3:.1f} GB/s</text>)svg"
                       "\n",
                       px(i_label), py(i_label * bandwidth) - 8, slope * 180 / 3.141592653589793, bandwidth);

    const char* colors[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd"};
    std::size_t index = 0;
    std::vector<std::pair<double, double>> placed;  // the labels' anchors so far
    for (const auto& r : run.results) {
        if (!r.roofline || r.gflops <= 0) continue;
        const char* color = colors[index++ % 4];
        const double x = px(r.roofline->intensity), y = py(r.gflops);
        svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="4" fill="{}"/>)" "\n", x, y, color);
        // Labels of points in the right third go to their left, inside the frame; a label
        // that would cover an earlier one (points of the same intensity: decode steps at
        // several T) moves down a line, with a leader back to its point.
        const bool leftward = x > left + 2 * (width - left - right) / 3;
        const double label_x = leftward ? x - 7 : x + 7;
        double label_y = y + 4;
        while (std::any_of(placed.begin(), placed.end(), [&](const auto& p) { return std::abs(p.first - label_x) < 200 && std::abs(p.second - label_y) < 14; }))
            label_y += 14;
        placed.emplace_back(label_x, label_y);
        if (label_y != y + 4)
            svg += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}"/>)" "\n", x, y, label_x, label_y - 4, color);
        svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" fill="{}" text-anchor="{}">{} ({:.0f}% of bound)</text>)" "\n", label_x, label_y, color,
                           leftward ? "end" : "start", point_label(r), 100 * r.roofline->fraction);
    }
    return svg + "</svg>\n";
}

}  // namespace attn_trace::cli
