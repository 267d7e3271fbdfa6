#include "explain_document.hpp"

#include <cmath>

#include <fmt/format.h>

#include "attn_trace/render.hpp"

namespace attn_trace {

std::string Notation::number(double x) const {
    if (std::isinf(x)) return latex_ ? (x < 0 ? "-\\infty" : "\\infty") : (x < 0 ? "-inf" : "inf");
    if (std::isnan(x)) return latex_ ? "\\mathrm{NaN}" : "nan";
    return format_rounded(x, precision_);
}

std::string Notation::factor(double x) const {
    const std::string text = number(x);
    return text.front() == '-' ? "(" + text + ")" : text;
}

std::string Notation::sub(const std::string& base, const std::string& index) const {
    return latex_ ? base + "_{" + index + "}" : base + "_" + index;
}

std::string Notation::exp(const std::string& argument) const { return latex_ ? "e^{" + argument + "}" : "e^(" + argument + ")"; }

std::string Notation::fraction(const std::string& top, const std::string& bottom) const {
    return latex_ ? "\\frac{" + top + "}{" + bottom + "}" : top + " / " + bottom;
}

std::string Notation::vector(const std::vector<double>& values) const {
    std::vector<std::string> parts;
    for (double x : values) parts.push_back(number(x));
    return fmt::format("({})", fmt::join(parts, ", "));
}

std::string Notation::words(const std::string& text) const { return latex_ ? "\\text{" + latex_text(text) + "}" : text; }

std::string render_explanation(const ExplainDocument& d, const std::string& format) {
    std::string out;
    if (format == "markdown") {
        out = "### " + d.heading + "\n";
        for (const auto& line : d.lines) out += "\n" + line.prose + (line.math.empty() ? "\n" : "\n$$" + line.math + "$$\n");
        if (!d.footnote.empty()) out += "\n*" + d.footnote + "*\n";
    } else if (format == "latex") {
        out = "\\noindent\\textbf{" + latex_text(d.heading) + "}\n";
        for (const auto& line : d.lines) out += "\n\\noindent " + latex_text(line.prose) + (line.math.empty() ? "\n" : "\n\\[ " + line.math + " \\]\n");
        if (!d.footnote.empty()) out += "\n\\noindent\\emph{" + latex_text(d.footnote) + "}\n";
    } else {
        out = d.heading + "\n";
        for (const auto& line : d.lines) out += "\n" + line.prose + "\n" + (line.math.empty() ? "" : "    " + line.math + "\n");
        if (!d.footnote.empty()) out += "\n(" + d.footnote + ")\n";
    }
    return out;
}

}  // namespace attn_trace
