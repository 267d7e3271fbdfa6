#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn_trace/render.hpp"

namespace attn_trace {

std::vector<const Step*> selected_steps(const Trace& trace, const RenderOptions& options) {
    std::vector<const Step*> out;
    for (const auto& step : trace.steps) {
        if (!options.steps.empty() && std::find(options.steps.begin(), options.steps.end(), step.name) == options.steps.end()) continue;
        if (options.head && step.head && *step.head != *options.head) continue;
        out.push_back(&step);
    }
    return out;
}

const std::vector<std::string>& render_formats() {
    static const std::vector<std::string> formats = {"text", "json"};
    return formats;
}

std::string render(const Trace& trace, const std::string& format, const RenderOptions& options) {
    if (format == "json") return render_json(trace, options);
    return render_text(trace, options);
}

std::string format_number(double x, int precision) {
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
    if (x == 0.0) return "0";  // exact zeros (blocked weights) stay visibly exact
    std::string text = fmt::format("{:.{}f}", x, precision);
    if (text.find_first_not_of("-0.") == std::string::npos) return fmt::format("{:.{}e}", x, std::max(1, precision - 2));  // tiny, not zero
    return text;
}

}  // namespace attn_trace
