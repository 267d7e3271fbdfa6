#include "explain_document.hpp"

#include <optional>
#include <string_view>
#include <cctype>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "attn_trace/number_text.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/render_html.hpp"

namespace attn_trace {

std::string Notation::number(double x) const {
    if (!std::isfinite(x)) return latex_ ? latex_number(nonfinite_name(x)) : nonfinite_name(x);
    return format_rounded(x, precision_);
}

std::string Notation::factor(double x) const {
    const std::string text = number(x);
    return text.front() == '-' ? "(" + text + ")" : text;
}

std::string Notation::sub(const std::string& base, const std::string& index) const {
    if (!latex_) return base + "_" + index;
    if (base.find('_') == std::string::npos) return base + "_{" + index + "}";
    // A name such as grad_z is one symbol: upright, its underscore escaped (else a double subscript).
    std::string upright;
    for (char c : base) upright += c == '_' ? std::string("\\_") : std::string(1, c);
    return "\\mathrm{" + upright + "}_{" + index + "}";
}

std::string Notation::exp(const std::string& argument) const { return latex_ ? "e^{" + argument + "}" : "e^(" + argument + ")"; }

std::string Notation::fraction(const std::string& top, const std::string& bottom) const {
    return latex_ ? "\\frac{" + top + "}{" + bottom + "}" : top + " / " + bottom;
}

namespace {
constexpr const char* latex_break = " \\\\\n  &\\quad ";  // " \\ &\quad ": the next line, indented
}

std::string Notation::vector(const std::vector<double>& values) const {
    std::vector<std::string> parts;
    for (double x : values) parts.push_back(number(x));
    return "(" + terms(parts, ", ", 8) + ")";
}

namespace {

// About how many characters a piece of LaTeX mathematics shows: commands (but the
// wide \infty and \quad) and braces count nothing, \frac{a}{b} counts its longer half. Rough, but enough to
// keep a chain of equalities inside the text width.
std::size_t shown_width(const std::string& math) {
    std::size_t width = 0;
    for (std::size_t i = 0; i < math.size(); ++i) {
        if (math[i] == '\\') {
            const std::size_t start = i + 1;
            while (i + 1 < math.size() && std::isalpha(static_cast<unsigned char>(math[i + 1]))) ++i;
            // ∞ and a \quad are as wide as two digits: a row of −∞ ran past the margin when they counted nothing.
            const std::string_view name(math.data() + start, i + 1 - start);
            if (name == "infty" || name == "quad") width += 2;
            continue;
        }
        if (math[i] == '-') width += 2;  // a minus sign, with the space TeX sets around it as an operator
        else if (math[i] != '{' && math[i] != '}' && math[i] != '_' && math[i] != '^' && math[i] != ' ') ++width;
    }
    return width;
}

// A display line of a plain article holds about this many characters of mathematics.
constexpr std::size_t latex_line_width = 60;

}  // namespace

std::string Notation::chain(const std::vector<std::string>& parts) const {
    std::string out;
    std::size_t line = 0;  // width shown on the current line so far
    for (std::size_t k = 0; k < parts.size(); ++k) {
        const std::size_t width = shown_width(parts[k]);
        const bool broken = latex_ && k > 0 &&
                            (parts[k].find("\\\\") != std::string::npos || parts[k - 1].find("\\\\") != std::string::npos || line + width > latex_line_width);
        if (k > 0) out += broken ? std::string(" =") + latex_break : " = ";
        line = (broken ? 0 : line) + width + 3;
        out += parts[k];
    }
    return out;
}

std::string Notation::terms(const std::vector<std::string>& parts, const std::string& separator, std::size_t per_line) const {
    std::string out;
    std::size_t line = 0;  // width shown on the current line so far
    for (std::size_t k = 0; k < parts.size(); ++k) {
        const std::size_t width = shown_width(parts[k]) + shown_width(separator);
        // A new line every per_line terms, or sooner when the terms are long.
        const bool broken = latex_ && k > 0 && ((per_line > 0 && k % per_line == 0) || line + width > latex_line_width);
        if (k > 0) out += separator + (broken ? latex_break : "");
        line = (broken ? 0 : line) + width;
        out += parts[k];
    }
    return out;
}

std::string Notation::words(const std::string& text) const { return latex_ ? "\\text{" + latex_text(text) + "}" : text; }

namespace {
// A line with breaks in it becomes an aligned block: every line starts at the
// same place, the continuations indented by \quad.
std::string display(const std::string& written) {
    // Two spaces part two equations ("z = 1,  max = 3"); TeX drops spaces in maths, so they become a \quad.
    std::string math;
    for (std::size_t i = 0; i < written.size(); ++i) {
        if (written.compare(i, 3, ",  ") != 0) {
            math += written[i];
            continue;
        }
        math += ",\\quad ";
        i += 2;
    }
    return math.find("\\\\") == std::string::npos ? math : "\\begin{aligned}\n  &" + math + "\n\\end{aligned}";
}
}  // namespace

namespace {
// How one format writes an explanation's three parts: the heading, each line (its
// prose, then its mathematics when it has some) and the footnote.
struct DocumentStyle {
    std::string (*heading)(const std::string&);
    std::string (*line)(const ExplainLine&, MathStyle);
    std::string (*footnote)(const std::string&);
};

std::optional<DocumentStyle> style_of(Format format) {
    switch (format) {
        case Format::text:
            return DocumentStyle{[](const std::string& h) { return h + "\n"; },
                                 [](const ExplainLine& l, MathStyle) { return "\n" + l.prose + "\n" + (l.math.empty() ? "" : "    " + l.math + "\n"); },
                                 [](const std::string& f) { return "\n(" + f + ")\n"; }};
        case Format::markdown:
            return DocumentStyle{[](const std::string& h) { return "### " + markdown_text(h) + "\n"; },
                                 [](const ExplainLine& l, MathStyle math) {
                                     return "\n" + markdown_text(l.prose) + "\n" + (l.math.empty() ? "" : "\n" + markdown_math(display(l.math), math, true) + "\n");
                                 },
                                 [](const std::string& f) { return "\n*" + markdown_text(f) + "*\n"; }};
        case Format::latex:
            return DocumentStyle{[](const std::string& h) { return "\\noindent\\textbf{" + latex_prose(h) + "}\n"; },
                                 [](const ExplainLine& l, MathStyle) {
                                     return "\n\\noindent " + latex_prose(l.prose) + (l.math.empty() ? "\n" : "\n\\[ " + display(l.math) + " \\]\n");
                                 },
                                 [](const std::string& f) { return "\n\\noindent\\emph{" + latex_text(f) + "}\n"; }};
        case Format::html:
            return DocumentStyle{[](const std::string& h) { return "<h2>" + html_escape(h) + "</h2>\n"; },
                                 [](const ExplainLine& l, MathStyle) {
                                     return "<p>" + html_escape(l.prose) + "</p>\n" +
                                            (l.math.empty() ? "" : "<pre class=\"math\">" + html_escape(l.math) + "</pre>\n");
                                 },
                                 [](const std::string& f) { return "<p class=\"muted\">" + html_escape(f) + "</p>\n"; }};
        case Format::json:
        case Format::csv: break;
    }
    return std::nullopt;
}
}  // namespace

std::string render_explanation(const ExplainDocument& d, Format format, MathStyle math) {
    const auto style = style_of(format);
    if (!style) throw std::logic_error(fmt::format("explain does not write {}", format));
    std::string out = style->heading(d.heading);
    for (const auto& line : d.lines) out += style->line(line, math);
    if (!d.footnote.empty()) out += style->footnote(d.footnote);
    return format == Format::latex ? latex_ragged_prose(out) : out;
}

bool latex_notation(Format format) {
    switch (format) {
        case Format::markdown:
        case Format::latex: return true;
        case Format::text:
        case Format::json:
        case Format::csv:
        case Format::html: return false;  // html shows the Unicode notation in <pre>
    }
    return false;  // a value outside the enum
}

}  // namespace attn_trace
