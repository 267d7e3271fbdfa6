#pragma once
// The bench's results as a table for people, JSON, CSV, an SVG chart of time
// against n on log-log axes, or the roofline chart (bench_roofline.cpp).
#include <string>
#include <vector>

#include "attn_trace/bench.hpp"

namespace attn_trace::cli {

std::string bench_text(const BenchConfig& config, const BenchRun& run);
std::string bench_json(const BenchConfig& config, const BenchRun& run);
std::string bench_csv(const BenchConfig& config, const BenchRun& run);
std::string bench_svg(const BenchConfig& config, const BenchRun& run);
// Log-log: arithmetic intensity against GFLOP/s, the two roofs and one point per measured
// setting; a chart saying so when the roofs were not measured.
std::string bench_roofline_svg(const BenchConfig& config, const BenchRun& run);
// "fast n=8192", "fast decode T=32768": a setting's name on the roofline chart.
std::string bench_point_label(const BenchConfig& config, const BenchResult& result);
// The line under a chart's title: the setting in words.
std::string bench_setting_text(const BenchConfig& config);
// A log-log plot area: log10 of the data from x0 to x1 and y0 to y1 over the box
// inside the margins of a width × height chart.
struct LogPlot {
    double width, height, left, right, top, bottom, x0, x1, y0, y1;
    double px(double x) const;
    double py(double y) const;
    // The frame, and each decade of y labelled ("10 ms" with unit " ms").
    std::string frame(const std::string& y_unit) const;
};
// An SVG's opening: its size, a white ground, the title and the setting under it (on
// two lines where one would pass the right edge: charts leave 64 px above their frame).
std::string svg_chart_head(double width, double height, double left, const std::string& title, const std::string& setting);

}  // namespace attn_trace::cli
