#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "attn_trace/render.hpp"

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

const std::vector<std::string>& render_formats() {
    static const std::vector<std::string> formats = {"text", "json", "markdown", "latex", "csv"};
    return formats;
}

std::string render(const Trace& trace, const std::string& format, const RenderOptions& options) {
    if (format == "json") return render_json(trace, options);
    if (format == "markdown") return render_markdown(trace, options);
    if (format == "latex") return render_latex(trace, options);
    if (format == "csv") return render_csv(trace, options);
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

std::string format_rounded(double x, int precision) {
    if (!std::isfinite(x)) return format_number(x, precision);
    std::string text = fmt::format("{:.{}f}", x, precision);
    if (text.find('.') != std::string::npos) {
        text.erase(text.find_last_not_of('0') + 1);
        if (text.back() == '.') text.pop_back();
    }
    return text == "-0" ? "0" : text;  // a tiny negative rounds to 0, not "-0"
}

std::string latex_text(const std::string& text) {
    static const std::vector<std::pair<std::string, std::string>> replacements = {
        {"\\", "\\textbackslash{}"}, {"_", "\\_"}, {"&", "\\&"}, {"%", "\\%"}, {"#", "\\#"}, {"$", "\\$"}, {"{", "\\{"},
        {"}", "\\}"}, {"~", "\\textasciitilde{}"}, {"^", "\\textasciicircum{}"}, {"ᵀ", "$^\\top$"}, {"·", "$\\cdot$"},
        {"√", "$\\surd$"}, {"−", "$-$"}, {"…", "\\dots{}"}, {"Σ", "$\\Sigma$"}, {"∞", "$\\infty$"}, {"×", "$\\times$"},
        {"≤", "$\\le$"}, {"≥", "$\\ge$"}, {"⌊", "$\\lfloor$"}, {"⌋", "$\\rfloor$"}, {"→", "$\\to$"},
        {"ℓ", "$\\ell$"}, {"²", "$^2$"}, {"³", "$^3$"}, {"⁴", "$^4$"}, {"⁶", "$^6$"}, {"⁰", "$^0$"}, {"₂", "$_2$"},
        {"§", "\\S{}"}, {"‖", "$\\|$"}, {"–", "--"}, {"—", "---"}, {"≠", "$\\ne$"}, {"≈", "$\\approx$"},
        {"∝", "$\\propto$"}, {"⇔", "$\\Leftrightarrow$"}, {"←", "$\\leftarrow$"}, {"θ", "$\\theta$"}, {"½", "$\\frac12$"},
        {"°", "$^\\circ$"}, {"⊗", "$\\otimes$"}, {"<", "\\textless{}"}, {">", "\\textgreater{}"}, {"|", "\\textbar{}"}};
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
        const auto match = std::find_if(replacements.begin(), replacements.end(),
                                        [&](const auto& r) { return text.compare(i, r.first.size(), r.first) == 0; });
        if (match == replacements.end()) {
            // Any other non-ASCII character (a token label in another script) would stop
            // pdflatex with inputenc's "not set up for use with LaTeX": write it as '?'
            // and skip its UTF-8 continuation bytes, so the document always compiles.
            const auto byte = static_cast<unsigned char>(text[i++]);
            if (byte < 0x80) {
                out += static_cast<char>(byte);
                continue;
            }
            out += '?';
            while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) ++i;
        } else {
            out += match->second;
            i += match->first.size();
        }
    }
    return out;
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
