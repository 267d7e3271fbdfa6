#pragma once
// The shape every explanation takes, whatever the format: a heading, then lines
// of prose each followed by a line of mathematics. The mathematics is written with
// a Notation, so one explanation serves text (Unicode), Markdown and LaTeX.
#include <string>
#include <vector>

#include "attn_trace/format_table.hpp"
#include "attn_trace/render.hpp"

namespace attn_trace {

class Notation {
public:
    Notation(bool latex, int precision) : latex_(latex), precision_(precision) {}
    bool latex() const { return latex_; }
    int precision() const { return precision_; }

    std::string number(double x) const;  // rounded to `precision`; -inf as -inf or -\infty
    std::string factor(double x) const;  // a number in a product: negatives in parentheses
    std::string sub(const std::string& base, const std::string& index) const;  // q_0, A_{12}
    std::string times() const { return latex_ ? " \\times " : " × "; }
    std::string dot() const { return latex_ ? " \\cdot " : " · "; }
    std::string exp(const std::string& argument) const;  // e^(…) / e^{…}
    std::string fraction(const std::string& top, const std::string& bottom) const;
    // A row's max and sum by the symbols of the steps that hold them, m_i (row_max) and ℓ_i
    // (row_sum), as the trace writes them (docs/NOTATION.md#writing-conventions).
    std::string max_of(const std::string& index) const { return latex_ ? "m_{" + index + "}" : "m_" + index; }
    std::string sum_symbol() const { return latex_ ? "\\sum" : "Σ"; }      // the operator, Σ_j
    std::string total(const std::string& index) const { return latex_ ? "\\ell_{" + index + "}" : "ℓ_" + index; }  // a sum's value
    std::string vector(const std::vector<double>& values) const;  // (0.5, 1.5), long ones broken into lines
    // parts joined by `separator`; in LaTeX a line break after every `per_line`
    // parts, so a sum of 16 terms stays inside the margin (render_explanation then
    // sets the line as an aligned block).
    std::string terms(const std::vector<std::string>& parts, const std::string& separator, std::size_t per_line) const;
    // a = b = c: in LaTeX, a part broken into lines starts and ends a line of its own.
    std::string chain(const std::vector<std::string>& parts) const;
    std::string ellipsis() const { return latex_ ? "\\dots" : "…"; }
    std::string words(const std::string& text) const;  // text inside mathematics
    std::string sqrt(const std::string& x) const { return latex_ ? "\\sqrt{" + x + "}" : "√" + x; }

private:
    bool latex_;
    int precision_;
};

struct ExplainLine {
    std::string prose;  // plain text; the renderers escape it
    std::string math;   // written with the document's Notation; may be empty
};

struct ExplainDocument {
    std::string heading;
    std::vector<ExplainLine> lines;
    std::string footnote;
};

// text: prose, then the mathematics indented; markdown: paragraphs with the
// mathematics displayed in `math`'s style ($$…$$ or GitHub's ```math blocks); latex: paragraphs with \[…\], an aligned
// block when the line is broken; html: a fragment of paragraphs and <pre> blocks
// (the Unicode notation). The Notation must be LaTeX for markdown and latex.
// Throws std::logic_error for a format explain does not write (check_format refuses
// it first).
std::string render_explanation(const ExplainDocument& document, Format format, MathStyle math = MathStyle::dollars);
// Whether an explanation in `format` writes its mathematics in LaTeX (the Notation's choice).
bool latex_notation(Format format);

}  // namespace attn_trace
