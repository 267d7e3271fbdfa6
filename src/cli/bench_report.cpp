#include "bench_report.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn_trace/cli_words.hpp"
#include "attn_trace/cpu_kernel.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/problem.hpp"
#include "attn_trace/size_text.hpp"
#include "report_error.hpp"

namespace attn_trace::cli {

namespace {

std::string describe_heads(const BenchConfig& c) {
    if (c.kv_head_count() == c.heads) return fmt::format("heads = {}", c.heads);
    return fmt::format("heads = {} over {} KV heads", c.heads, c.kv_head_count());
}

std::string describe_roofs(const BenchConfig& c, const Roofs& roofs) {
    return fmt::format("roofs: multiply-add peak {:.1f} GFLOP/s ({}{}, {} thread{}), copy bandwidth {:.1f} GB/s (256 MiB, read + written)",
                       roofs.compute_gflops(c.dtype), kernel_target_description(kernel_target()), c.dtype == Dtype::f64 ? ", halved for f64" : "",
                       c.threads, c.threads == 1 ? "" : "s", roofs.copy_gb_per_s);
}

// The intensity, the bound, the roof that sets it and the measured share of it.
std::string roofline_cell(const BenchResult& r) {
    if (!r.roofline) return "";
    return fmt::format("{:>7.2f}  {:>8.1f}  {:<7} {:>4.0f}%", r.roofline->intensity, r.roofline->bound_gflops, bound_name(*r.roofline),
                       100 * r.roofline->fraction);
}

std::string bench_text_table(const BenchRun& run, BenchMode mode);

}  // namespace

std::string bench_setting_text(const BenchConfig& c) {
    return fmt::format("d_k = {}, {}, {}, {}, {} thread{}, CPU kernel {}, {} repeat{} after {} warm-up{} (ms: median, min–max)", c.d_k,
                       describe_heads(c), c.causal ? "causal" : "no mask", dtype_name(c.dtype), c.threads, c.threads == 1 ? "" : "s",
                       kernel_target(), c.repeats, c.repeats == 1 ? "" : "s", c.warmup, c.warmup == 1 ? "" : "s");
}

double LogPlot::px(double x) const { return left + (std::log10(x) - x0) / (x1 - x0) * (width - left - right); }
double LogPlot::py(double y) const { return height - bottom - (std::log10(y) - y0) / (y1 - y0) * (height - top - bottom); }

std::string LogPlot::frame(const std::string& y_unit) const {
    std::string svg = fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#888"/>)" "\n", left, top, width - left - right,
                                  height - top - bottom);
    for (double e = y0; e <= y1; e += 1)
        svg += fmt::format(R"(<text x="{}" y="{:.1f}" text-anchor="end">{:g}{}</text>)" "\n", left - 6, py(std::pow(10, e)) + 4, std::pow(10, e), y_unit);
    return svg;
}

std::string svg_chart_head(double width, double height, double left, const std::string& title, const std::string& setting) {
    std::string svg = fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="12">)"
                                  "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
                                  width, height);
    // The setting goes under the title, broken where it would pass the right edge (at 11 px
    // a character of this font is at most about 6 px wide): after a comma or before a
    // parenthesis, never inside one.
    svg += fmt::format(R"(<text x="{}" y="20" font-size="14">{}</text>)" "\n", left, title);
    const auto fits = static_cast<std::size_t>((width - left - 10) / 6);
    std::size_t start = 0;
    for (int line = 0; start < setting.size(); ++line) {
        std::size_t end = setting.size();
        if (end - start > fits) {
            std::size_t last_break = 0;
            int depth = 0;
            for (std::size_t i = start; i < start + fits; ++i) {
                if (depth == 0 && setting[i] == ' ' && i > start && (setting[i - 1] == ',' || setting[i + 1] == '(')) last_break = i;
                depth += setting[i] == '(' ? 1 : setting[i] == ')' ? -1 : 0;
            }
            if (last_break != 0) end = last_break;
        }
        svg += fmt::format(R"(<text x="{}" y="{}" font-size="11" fill="#555">{}</text>)" "\n", left, 38 + 14 * line,
                           setting.substr(start, end - start));
        start = end + 1;
    }
    return svg;
}

std::string bench_text(const BenchConfig& c, const BenchRun& run) {
    std::string out = fmt::format("attn-trace bench: {}\n", bench_setting_text(c));
    if (run.roofs) out += describe_roofs(c, *run.roofs) + "\n";
    for (const BenchMode mode : {BenchMode::forward, BenchMode::backward, BenchMode::decode})
        if (std::any_of(run.results.begin(), run.results.end(), [mode](const BenchResult& r) { return r.mode == mode; }))
            out += "\n" + bench_text_table(run, mode);
    return out;
}

namespace {

// One table per mode: forward and backward settings by n with the scores held, decode
// settings by T with the cache read per second and its share of the copy bandwidth.
std::string bench_text_table(const BenchRun& run, BenchMode mode) {
    const bool decode = mode == BenchMode::decode;
    std::string out = mode == BenchMode::backward ? "backward (forward included; GFLOP/s counts 14·n·m·d_k per head):\n" : "";
    const std::string roofline_head = run.roofs ? fmt::format("{:>7}  {:>8}  {:<7} {:>5}", "FLOP/B", "bound", "roof", "of it") : "";
    const std::string middle_head = decode ? fmt::format("{:>10}  {:>6}", "cache GB/s", "% copy") : fmt::format("{:>12}", "scores held");
    out += fmt::format("{:>7}  {:<6} {:>10}  {:>19}  {:>8}  {}  {}  {}\n", decode ? "T" : "n", "impl", "ms", "min–max", "GFLOP/s", middle_head,
                       roofline_head, "max diff");
    for (const auto& r : run.results) {
        if (r.mode != mode) continue;
        const std::size_t length = decode ? r.m : r.n;
        if (r.status != "ok") {
            out += fmt::format("{:>7}  {:<6} {}: {}\n", length, r.impl, r.status, cli_words(r.reason));
            continue;
        }
        const std::string diff = r.max_abs_diff ? fmt::format("{:.2e} vs {}", *r.max_abs_diff, r.compared_with) : "";
        const std::string middle = !decode ? fmt::format("{:>12}", size_text(static_cast<double>(r.score_bytes)))
                                   : run.roofs ? fmt::format("{:>10.1f}  {:>5.0f}%", r.cache_gb_per_s, 100 * r.cache_gb_per_s / run.roofs->copy_gb_per_s)
                                               : fmt::format("{:>10.1f}  {:>6}", r.cache_gb_per_s, "");
        out += fmt::format("{:>7}  {:<6} {:>10.3f}  {:>19}  {:>8.1f}  {}  {}  {}\n", length, r.impl, r.median_ms,
                           fmt::format("{:.3f}–{:.3f}", r.min_ms, r.max_ms), r.gflops, middle, roofline_cell(r), diff);
    }
    return out;
}

}  // namespace

std::string bench_json(const BenchConfig& c, const BenchRun& run) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const auto& r : run.results) {
        nlohmann::ordered_json row = {{"mode", bench_mode_name(r.mode)}, {"n", r.n}, {"m", r.m}, {"d_k", c.d_k}, {"heads", c.heads}, {"kv_heads", c.kv_head_count()},
                                      {"causal", c.causal}, {"impl", r.impl}, {"status", r.status}};
        if (r.status == "ok") {
            row["median_ms"] = r.median_ms;
            row["min_ms"] = r.min_ms;
            row["max_ms"] = r.max_ms;
            row["times_ms"] = r.times_ms;
            row["gflops"] = r.gflops;
            row["score_bytes"] = r.score_bytes;
            row["max_abs_diff"] = r.max_abs_diff ? nlohmann::ordered_json(*r.max_abs_diff) : nlohmann::ordered_json(nullptr);
            if (r.max_abs_diff) row["compared_with"] = r.compared_with;
            row["flops"] = r.work.flops;
            row["bytes"] = r.work.bytes;
            if (r.mode == BenchMode::decode) {
                row["cache_bytes"] = r.work.cache_bytes;
                row["cache_gb_per_s"] = r.cache_gb_per_s;
            }
            if (r.roofline) {
                row["intensity"] = r.roofline->intensity;
                row["bound_gflops"] = r.roofline->bound_gflops;
                row["bound_by"] = bound_name(*r.roofline);
                row["fraction_of_bound"] = r.roofline->fraction;
            }
        } else {
            row["reason"] = cli_words(r.reason);
        }
        rows.push_back(std::move(row));
    }
    nlohmann::ordered_json out = {{"attn_trace_bench", 1},
                                  {"dtype", dtype_name(c.dtype)},
                                  {"threads", c.threads},
                                  {"kernel", kernel_target()},
                                  {"repeats", c.repeats},
                                  {"warmup", c.warmup},
                                  {"seed", c.seed}};
    if (run.roofs) out["roofs"] = {{"fma_gflops", run.roofs->compute_gflops(c.dtype)}, {"copy_gb_per_s", run.roofs->copy_gb_per_s}};
    out["results"] = rows;
    return out.dump(1) + "\n";
}

std::string bench_csv(const BenchConfig& c, const BenchRun& run) {
    std::string out = "n,m,d_k,heads,causal,impl,status,median_ms,min_ms,max_ms,gflops,score_bytes,max_abs_diff,"
                      "mode,kv_heads,intensity,bound_gflops,bound_by,fraction_of_bound,cache_gb_per_s,fma_gflops,copy_gb_per_s\n";
    const std::string roofs = run.roofs ? fmt::format("{},{}", run.roofs->compute_gflops(c.dtype), run.roofs->copy_gb_per_s) : ",";
    for (const auto& r : run.results) {
        const std::string setting = fmt::format("{},{},{},{},{},{}", r.n, r.m, c.d_k, c.heads, c.causal, r.impl);
        const std::string mode = fmt::format("{},{}", bench_mode_name(r.mode), c.kv_head_count());
        if (r.status != "ok") {
            out += fmt::format("{},{},,,,,,,{},,,,,,{}\n", setting, r.status, mode, roofs);
            continue;
        }
        const std::string roofline = r.roofline ? fmt::format("{},{},{},{}", r.roofline->intensity, r.roofline->bound_gflops, bound_name(*r.roofline),
                                                              r.roofline->fraction)
                                                : ",,,";
        out += fmt::format("{},ok,{},{},{},{},{},{},{},{},{},{}\n", setting, r.median_ms, r.min_ms, r.max_ms, r.gflops, r.score_bytes,
                           r.max_abs_diff ? fmt::format("{}", *r.max_abs_diff) : "", mode, roofline,
                           r.mode == BenchMode::decode ? fmt::format("{}", r.cache_gb_per_s) : "", roofs);
    }
    return out;
}

// Median time against n, log-log, one line per implementation, and a dashed
// n² line through the last point of the first implementation that is not a
// decode step: where the measured line runs parallel to it, cost grows as n².
// A run of decode steps alone is drawn against T with a T line (one query reads
// each cached key once: linear).
std::string bench_svg(const BenchConfig& c, const BenchRun& run) {
    const std::vector<BenchResult>& results = run.results;
    std::map<std::string, std::vector<std::pair<double, double>>> lines;  // impl -> (n, ms)
    std::map<std::string, BenchMode> line_modes;
    double n_low = INFINITY, n_high = 0, ms_low = INFINITY, ms_high = 0;
    for (const auto& r : results) {
        if (r.status != "ok" || r.median_ms <= 0) continue;
        const std::string line = r.mode == BenchMode::forward ? r.impl : r.impl + " " + bench_mode_name(r.mode);
        lines[line].emplace_back(static_cast<double>(r.m), r.median_ms);  // m = n, or T
        line_modes[line] = r.mode;
        n_low = std::min(n_low, static_cast<double>(r.m));
        n_high = std::max(n_high, static_cast<double>(r.m));
        ms_low = std::min(ms_low, r.median_ms);
        ms_high = std::max(ms_high, r.median_ms);
    }
    const double width = 640, height = 444, left = 70, right = 150, top = 64, bottom = 50;
    const bool decode_only = !line_modes.empty() && std::all_of(line_modes.begin(), line_modes.end(), [](const auto& m) { return m.second == BenchMode::decode; });
    const bool some_decode = std::any_of(line_modes.begin(), line_modes.end(), [](const auto& m) { return m.second == BenchMode::decode; });
    std::string svg = svg_chart_head(width, height, left, decode_only ? "decode step time vs T" : "attention time vs n", bench_setting_text(c));
    if (lines.empty()) return svg + "<text x=\"70\" y=\"200\">no timings</text>\n</svg>\n";
    const double x0 = std::log10(n_low) - 0.1, x1 = std::log10(n_high) + 0.1;
    const double y0 = std::floor(std::log10(ms_low)), y1 = std::ceil(std::log10(ms_high)) + (ms_high == ms_low ? 1 : 0);
    const LogPlot plot{width, height, left, right, top, bottom, x0, x1, y0, y1};
    auto px = [&](double n) { return plot.px(n); };
    auto py = [&](double ms) { return plot.py(ms); };
    svg += plot.frame(" ms");
    std::vector<double> ticks;  // the plotted lengths only: a skipped or unavailable setting has no point
    for (const auto& [line, points] : lines)
        for (const auto& point : points)
            if (std::find(ticks.begin(), ticks.end(), point.first) == ticks.end()) ticks.push_back(point.first);
    for (const double n : ticks)
        svg += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle">{}</text>)" "\n", px(n), height - bottom + 18, n);
    const char* x_label = decode_only ? "T, cached tokens (log scale)" : some_decode ? "n, or T for decode steps (log scale)" : "n (log scale)";
    svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">{}</text>)" "\n", left + (width - left - right) / 2, height - 10, x_label);

    // The reference: ms = ms_ref · (n / n_ref)^power, clipped to the plot.
    // Plain variables, not a structured binding: the lambda below captures them (clang < 16 refuses bindings).
    const auto through = std::find_if(line_modes.begin(), line_modes.end(), [&](const auto& m) { return decode_only || m.second != BenchMode::decode; });
    const auto& points_ref = lines.at(through->first);
    const double n_ref = points_ref.back().first, ms_ref = points_ref.back().second, power = decode_only ? 1 : 2;
    auto reference = [&](double n) { return ms_ref * std::pow(n / n_ref, power); };
    const double n_from = std::max(std::pow(10, x0), n_ref * std::pow(std::pow(10, y0) / ms_ref, 1 / power));
    svg += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#999" stroke-dasharray="5,4"/>)" "\n", px(n_from),
                       py(reference(n_from)), px(n_ref), py(ms_ref));
    svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" fill="#777">{}</text>)" "\n", px(n_from) + 4, py(reference(n_from)) - 6, decode_only ? "∝ T" : "∝ n²");

    const char* colors[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd"};
    std::size_t index = 0;
    for (const auto& [impl, points] : lines) {
        const char* color = colors[index % 4];
        std::string path;
        for (const auto& [n, ms] : points) {
            path += fmt::format("{:.1f},{:.1f} ", px(n), py(ms));
            svg += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="{}"/>)" "\n", px(n), py(ms), color);
        }
        svg += fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="2"/>)" "\n", path, color);
        svg += fmt::format(R"(<text x="{}" y="{}" fill="{}">{}</text>)" "\n", width - right + 12, top + 16 + 18 * static_cast<double>(index), color, impl);
        ++index;
    }
    return svg + "</svg>\n";
}

}  // namespace attn_trace::cli
