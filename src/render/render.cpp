#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn_trace/number_text.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/render_html.hpp"

namespace attn_trace {

std::vector<const Step*> selected_steps(const Trace& trace, const RenderOptions& options) {
    std::vector<const Step*> out;
    for (const auto& step : trace.steps) {
        if (!options.steps.empty() && std::find(options.steps.begin(), options.steps.end(), step.name) == options.steps.end()) continue;
        if (options.head && step.head && *step.head != *options.head) continue;
        if (options.batch && step.batch && *step.batch != *options.batch) continue;
        out.push_back(&step);
    }
    return out;
}

std::string render(const Trace& trace, Format format, const RenderOptions& options) {
    switch (format) {
        case Format::text: return render_text(trace, options);
        case Format::json: return render_json(trace, options);
        case Format::markdown: return render_markdown(trace, options);
        case Format::latex: return render_latex(trace, options);
        case Format::csv: return render_csv(trace, options);
        case Format::html: return render_html(trace, options);
    }
    throw std::logic_error("render: a Format outside the table");
}

std::string format_trace_number(double x) {
    if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 9007199254740992.0) return fmt::format("{}", static_cast<long long>(x));
    return fmt::format("{:.6g}", x);
}

std::string format_number(double x, int precision) {
    if (!std::isfinite(x)) return nonfinite_name(x);
    if (x == 0.0) return "0";  // exact zeros (blocked weights) stay visibly exact
    // Past 10^10 fixed notation only lengthens the column (1e200 is 201 digits): the exponent says it.
    if (std::fabs(x) >= 1e10) return fmt::format("{:.{}e}", x, std::max(1, precision - 2));
    std::string text = fmt::format("{:.{}f}", x, precision);
    if (text.find_first_not_of("-0.") == std::string::npos) return fmt::format("{:.{}e}", x, std::max(1, precision - 2));  // tiny, not zero
    return text;
}

std::string format_rounded(double x, int precision) {
    if (!std::isfinite(x)) return format_number(x, precision);
    std::string text = fmt::format("{:.{}f}", x, precision);
    if (text.find('.') != std::string::npos) {
        text.erase(text.find_last_not_of('0') + 1);
        if (text.back() == '.') text.pop_back();
    }
    return text == "-0" ? "0" : text;  // a tiny negative rounds to 0, not "-0"
}



std::string markdown_text(const std::string& text) {
    static const std::string special = "\\`*_[]<>|~$";
    std::string out;
    for (char c : text) {
        if (special.find(c) != std::string::npos) out += '\\';
        out += c;
    }
    return out;
}

}  // namespace attn_trace
