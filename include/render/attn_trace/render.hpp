#pragma once
// Renderers: a trace in, text for people, JSON for scripts, Markdown and LaTeX
// for worksheets, CSV for one matrix, SVG and terminal heatmaps for the weights.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attn_trace/format_table.hpp"
#include "attn_trace/trace.hpp"

namespace attn_trace {

// How Markdown writes mathematics (docs/COMMANDS.md#output-formats): `dollars`,
// $…$ inline and $$…$$ displayed, which GitHub, pandoc, Jupyter and KaTeX pages
// read; `github`, GitHub's own $`…`$ and fenced math blocks.
enum class MathStyle : std::uint8_t { dollars, github };
const std::vector<std::string>& math_style_names();  // in enum order, as the option takes them
// LaTeX mathematics as Markdown in `style`, inline or as a display of its own lines.
std::string markdown_math(const std::string& latex, MathStyle style, bool display);

struct RenderOptions {
    int precision = 4;                 // decimals in text
    bool full = false;                 // text: every row and column, no "…"
    bool color = false;                // text: ANSI colours (only on a terminal)
    std::vector<StepName> steps;       // only these steps; empty = all
    std::optional<int> head;           // only this head's per-head steps
    std::optional<int> batch;          // only this batch element's steps
    bool header = true;                // markdown/latex: the title, problem line and notes
    MathStyle math = MathStyle::dollars;  // markdown: how the formulas are written
};

// The steps that pass the --steps / --head filters, in trace order.
std::vector<const Step*> selected_steps(const Trace& trace, const RenderOptions& options);

// The renderer of each format a trace is printed in (format_names(for_trace)).
std::string render(const Trace& trace, Format format, const RenderOptions& options);

std::string render_text(const Trace& trace, const RenderOptions& options);
std::string render_json(const Trace& trace, const RenderOptions& options);
// render_json's output read back (a golden trace for `check --golden`): its
// command, dtype and steps. Throws InputError naming the file and the JSON path of
// what is malformed.
Trace load_golden_trace(const std::string& path);
Trace parse_golden_trace(const std::string& text, const std::string& file);  // the text of one; `file` names it in messages
// Markdown: a table per step with its formula and shape, ready for a worksheet.
std::string render_markdown(const Trace& trace, const RenderOptions& options);
// LaTeX (amsmath): a bmatrix per step with its formula and shape.
std::string render_latex(const Trace& trace, const RenderOptions& options);
// CSV of exactly one step (labels in the first row and column, full precision);
// throws InputError when the filters leave more or fewer than one step.
std::string render_csv(const Trace& trace, const RenderOptions& options);

// What printing a trace in `format` will cost, worked out from the trace before a
// renderer allocates anything: the bytes written, and the memory the renderer holds
// while writing them. Estimates within a factor of about two, to refuse a print of
// hundreds of megabytes before it starts rather than to account for every byte.
struct OutputEstimate {
    double bytes = 0, memory = 0;
    std::size_t steps = 0, cells = 0;  // what is printed: steps and numbers
};
OutputEstimate estimate_output(const Trace& trace, Format format, const RenderOptions& options);

// A note as one sentence for people (every renderer writes notes this way).
std::string note_text(const Note& note);

// One step as render_text writes it: the header line and the aligned table.
std::string render_step_text(const Step& step, const RenderOptions& options);
// "n = 3 queries, m = 3 keys, ...": the problem line under a trace's title.
std::string describe_problem(const TraceSummary& problem);

// The attention weights of every (batch, head) as pictures: a grid of coloured
// cells with the numbers inside (plain shading characters without colour), and
// an SVG with one panel per head, a colour scale and the masked cells marked.
// Both throw InputError when the trace has no full weights matrix.
std::string render_heatmap(const Trace& trace, const RenderOptions& options);
std::string render_weights_svg(const Trace& trace, const RenderOptions& options);
// Refuses (InputError) an SVG of more than its limit of cells: render_weights_svg checks its
// panels, and a command that computes a picture's trace first checks its estimate before.
void check_svg_cells(std::size_t cells);

// One number as the text renderer writes it: "0" for an exact zero, "-inf",
// "nan", from 10^10 up or too small to show a digit in scientific notation
// ("1.05e+12"), otherwise fixed with `precision` decimals.
std::string format_number(double x, int precision);
// A trace number (a count, a size, a difference): whole numbers in full
// ("16777216", not "1.67772e+07"), others to 6 significant digits.
std::string format_trace_number(double x);
// A number rounded to `precision` decimals without trailing zeros ("0.5", "2",
// "0.1243"): how explanations and exercises write the arithmetic, so every number
// of one explanation is rounded the same way.
std::string format_rounded(double x, int precision);
// Text-mode LaTeX for a formula or label: escapes LaTeX's special characters and
// writes the Unicode symbols the trace uses (ᵀ, ·, √, −, …, Σ, ∞) as LaTeX.
std::string latex_text(const std::string& text);
// A number as the text renderer writes it, in math mode: "-inf" → -\infty, "nan" →
// \mathrm{NaN}, "1.2e-05" → 1.2\times10^{-5}.
std::string latex_number(const std::string& text);
// A step's formula ("ℓ_new = e^(m_old − m_new) ℓ_old + Σ_j e^(S_ij − m_new)") as
// LaTeX: the mathematics in math mode ($\ell_{\mathrm{new}} = e^{m_{\mathrm{old}} - …}$),
// the words among it ("0 where a query may read a key, −∞ where it may not") as text.
std::string latex_formula(const std::string& formula);
// A sentence or formula in pieces, in the order they come: each formula in it as LaTeX
// (without $), each run of words as plain text, spaces and punctuation kept.
// `starts_with_math`: a step's formula, which begins with mathematics even where its
// first word is a number or a letter ("0 where ...", "A V (v columns 0…1)").
struct TextPiece {
    bool math;
    std::string text;
};
std::vector<TextPiece> text_pieces(const std::string& text, bool starts_with_math);
// Prose with formulas in it ("ℓ_new = rescale · ℓ_old + Σ_j e^(S_j − m_new), over
// this tile's keys") as LaTeX: the words as text, the formulas in math mode.
std::string latex_prose(const std::string& text);
// LaTeX paragraphs set ragged right: prose names steps and functions in long words that
// cannot be broken (grad\_scores, max\_abs\_diff\_vs\_full); a ragged line ends short
// before one instead of running into the margin or stretching its spaces into an
// underfull box (docs/COMMANDS.md#output-formats).
std::string latex_ragged_prose(const std::string& paragraphs);
// A LaTeX fragment as a whole document: a plain article with amsmath (the packages of
// texlive-latex-base only), which pdflatex compiles as it is (docs/COMMANDS.md#output-formats).
std::string latex_document(const std::string& fragment);
// Markdown inline text for a label, title or note: backslash-escapes the characters
// GitHub-flavoured Markdown would read as markup or HTML (`<pad>` would vanish as a
// tag, `*`, `_`, `|` would start emphasis or end a table cell).
std::string markdown_text(const std::string& text);

}  // namespace attn_trace
