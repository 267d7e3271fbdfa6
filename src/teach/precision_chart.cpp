// `precision --svg` (docs/COMMANDS.md#precision): the largest absolute error against f64 by
// step, a line per type on a log scale. An exact step (error 0) sits on the bottom edge, an
// infinite one on the top edge with "inf" beside it: neither has a place on a log axis.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn_trace/precision.hpp"
#include "attn_trace/trace.hpp"

namespace attn_trace {

namespace {

constexpr double height = 440, left = 80, right = 120, top = 56, bottom = 110, min_step_width = 30;

std::string xml_text(const std::string& text) {
    std::string out;
    for (char c : text) out += c == '<' ? std::string("&lt;") : c == '>' ? std::string("&gt;") : c == '&' ? std::string("&amp;") : std::string(1, c);
    return out;
}

// The first `count` characters of UTF-8 text, never splitting a character.
std::string cut_text(const std::string& text, std::size_t count) {
    std::size_t at = 0;
    for (std::size_t characters = 0; at < text.size() && characters < count; ++characters)
        do ++at;
        while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80);
    return text.substr(0, at);
}

// Characters, not bytes: an accented or a CJK title is cut where its width is, not sooner.
std::size_t characters(const std::string& text) {
    return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

const char* colour_of(Dtype dtype) {
    switch (dtype) {
        case Dtype::f32: return "#1f5fa8";
        case Dtype::f16: return "#d62728";
        case Dtype::bf16: return "#e07b18";
        case Dtype::f64: break;
    }
    return "#555";
}

// Under the axis, where the labels are short: "scores b1 h0" (batch 1, head 0).
std::string axis_label(const PrecisionStep& step) {
    return step.name + (step.batch ? fmt::format(" b{}", *step.batch) : "") + (step.head ? fmt::format(" h{}", *step.head) : "");
}

// In a point's tooltip: "scores (batch 1, head 0)".
std::string tooltip_name(const PrecisionStep& step) { return placed_name(step.name, step_place(step.head, step.batch, std::nullopt, std::nullopt)); }

}  // namespace

std::string precision_svg(const PrecisionReport& report) {
    const auto& steps = report.runs.front().steps;
    // At least 30 px a step, and wide enough for the titles; the steps spread over the plot.
    const double width = std::max(640.0, left + right + min_step_width * static_cast<double>(steps.size()));
    const double step_width = (width - left - right) / static_cast<double>(std::max<std::size_t>(steps.size(), 1));
    // Whole decades around the finite, non-zero errors.
    double smallest = 1, largest = 1e-8;
    for (const auto& run : report.runs)
        for (const auto& step : run.steps)
            if (std::isfinite(step.max_abs_error) && step.max_abs_error > 0) {
                smallest = std::min(smallest, step.max_abs_error);
                largest = std::max(largest, step.max_abs_error);
            }
    const double low = std::floor(std::log10(std::min(smallest, largest))), high = std::ceil(std::log10(largest)) + (largest == 1e-8 ? 1 : 0);
    const double plot_top = top + 16, plot_bottom = height - bottom - 16;  // the edges keep 16 px for inf and 0
    const auto y_of = [&](double error) {
        if (!std::isfinite(error)) return top;
        if (error <= 0) return height - bottom;
        return plot_bottom - (std::log10(error) - low) / std::max(high - low, 1.0) * (plot_bottom - plot_top);
    };
    const auto x_of = [&](std::size_t s) { return left + step_width * (static_cast<double>(s) + 0.5); };

    std::string out = fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                                  "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n", width, height);
    out += "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
    out += fmt::format("<text x=\"{}\" y=\"20\" font-weight=\"bold\">Largest error against f64 by step{}</text>\n", left,
                       report.max_shift ? "" : ", softmax without the max shift");
    // The problem's title under it, cut to what the width holds (about 6.5 px a character).
    const auto fits = static_cast<std::size_t>((width - left) / 6.5);
    if (!report.title.empty())
        out += fmt::format("<text x=\"{}\" y=\"38\" fill=\"#555\">{}</text>\n", left,
                           xml_text(characters(report.title) > fits ? cut_text(report.title, fits) + "…" : report.title));
    for (int e = static_cast<int>(low); e <= static_cast<int>(high); ++e) {
        const double py = y_of(std::pow(10.0, e));
        out += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#e4e4e4\"/>\n", left, py, width - right, py);
        out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">1e{}</text>\n", left - 6, py + 4, e);
    }
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">inf</text>\n", left - 6, top + 4);
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">0</text>\n", left - 6, height - bottom + 4);
    for (std::size_t s = 0; s < steps.size(); ++s) {
        out += fmt::format("<text x=\"{0:.1f}\" y=\"{1}\" text-anchor=\"end\" transform=\"rotate(-60 {0:.1f} {1})\">{2}</text>\n", x_of(s),
                           height - bottom + 16, xml_text(axis_label(steps[s])));
    }
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#555\"/>\n", left, top, width - right - left, height - bottom - top);
    out += fmt::format("<text x=\"18\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {0})\">max |x − x_f64| (log scale)</text>\n",
                       (top + height - bottom) / 2);
    std::size_t entry = 0;
    for (const auto& run : report.runs) {
        if (run.dtype == Dtype::f64) continue;  // the reference: 0 everywhere
        std::string points;
        for (std::size_t s = 0; s < run.steps.size(); ++s) points += fmt::format("{:.1f},{:.1f} ", x_of(s), y_of(run.steps[s].max_abs_error));
        out += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", points, colour_of(run.dtype));
        for (std::size_t s = 0; s < run.steps.size(); ++s)
            out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"><title>{} {}: {:.3g}</title></circle>\n", x_of(s),
                               y_of(run.steps[s].max_abs_error), colour_of(run.dtype), dtype_name(run.dtype), xml_text(tooltip_name(run.steps[s])),
                               run.steps[s].max_abs_error);
        const double ly = top + 14 + 22.0 * static_cast<double>(entry++), lx = width - right + 14;
        out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2\"/>\n", lx, ly, lx + 24, ly,
                           colour_of(run.dtype));
        out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}{}</text>\n", lx + 30, ly + 4, dtype_name(run.dtype), run.first_nonfinite ? " (inf)" : "");
    }
    return out + "</svg>\n";
}

}  // namespace attn_trace
