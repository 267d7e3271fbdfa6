#pragma once
// What every table-shaped renderer (text, markdown, latex, csv, heatmap) shares:
// which rows and columns a summary keeps, the labels, how a cell is written.
#include <cstddef>
#include <string>
#include <vector>

#include "attn_trace/render.hpp"
#include "attn_trace/trace.hpp"

namespace attn_trace {

// The indices to print; npos marks the "…" gap of a summarised matrix.
std::vector<std::size_t> visible_rows(std::size_t count, bool full);
std::vector<std::size_t> visible_columns(std::size_t count, bool full);
inline constexpr std::size_t gap = static_cast<std::size_t>(-1);

// Token labels where the step has them, indices otherwise; "…" for the gap.
std::string row_label(const Step& step, std::size_t i);
std::string column_label(const Step& step, std::size_t j);

// "scores  Q Kᵀ  (3, 3)  head 0": the header line of a step.
std::string step_title(const Step& step);

// Cells as people read them: a matrix of integers prints as integers, anything
// else with `precision` decimals (format_number).
class CellFormat {
public:
    CellFormat(const Matrix& values, int precision);
    std::string operator()(double x) const;

private:
    bool integers_;
    int precision_;
};

// A weight or exponential that is exactly 0 because its key is masked, or a −∞ score.
bool is_blocked_cell(const Step& step, double x);

// Code points, not bytes: labels and "…" may be UTF-8.
std::size_t display_width(const std::string& text);
std::string pad_left(const std::string& text, std::size_t width);
std::string pad_right(const std::string& text, std::size_t width);

}  // namespace attn_trace

namespace attn_trace {

// The weights pictures (terminal heatmap, SVG) share one colour scale and one
// notion of a masked cell.
struct Rgb {
    int r, g, b;
};
// 0 → near white, 0.5 → mid blue, 1 → dark blue (ColorBrewer "Blues").
Rgb weight_colour(double weight);

// One panel of a weights picture: the weights step and, where the trace has it,
// the additive mask of the same head, to tell a masked 0 from an underflowed one.
struct WeightsPanel {
    const Step* weights;
    const Step* mask;  // may be null
    bool masked(std::size_t i, std::size_t j) const;
    std::string title() const;  // "head 1", "batch 0, head 1", "weights"
};
// The full weights matrices the filters select (steps with t or tile are partial
// matrices and are left out); throws InputError when there are none.
std::vector<WeightsPanel> weights_panels(const Trace& trace, const RenderOptions& options, const std::string& what);

}  // namespace attn_trace
