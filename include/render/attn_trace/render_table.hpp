#pragma once
// What every table-shaped renderer (text, markdown, latex, csv, heatmap) shares:
// which rows and columns a summary keeps, the labels, how a cell is written.
#include <cstddef>
#include <string>
#include <vector>

#include "attn_trace/render.hpp"
#include "attn_trace/text_width.hpp"  // display_width, fit_width
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
    bool integers() const { return integers_; }  // every finite value whole: written without decimals

private:
    bool integers_;
    int precision_;
};

// A weight or exponential that is exactly 0 because its key is masked, or a −∞ score.
bool is_blocked_cell(const Step& step, double x);

// Padded to `width` terminal columns (display_width: labels and "…" may be UTF-8).
std::string pad_left(const std::string& text, std::size_t width);
std::string pad_right(const std::string& text, std::size_t width);

}  // namespace attn_trace

namespace attn_trace {

// The heatmaps (terminal, SVG) share one colour scale and one notion of a masked cell.
struct Rgb {
    int r, g, b;
};
// 0 → near white, 0.5 → mid blue, 1 → dark blue (ColorBrewer "Blues").
Rgb weight_colour(double weight);

// One panel of a heatmap: a per-head step (weights by default; scores, scaled,
// capped or masked when --steps names one) and, where the trace has it, the
// additive mask of the same head, to tell a masked cell from an underflowed 0.
// Weights are coloured on 0…1; the other steps on the finite range of all panels.
struct HeatmapPanel {
    const Step* values;
    const Step* mask;  // may be null
    double low = 0, high = 1;
    bool masked(std::size_t i, std::size_t j) const;
    double shade(double x) const;  // x placed on the panel's colour scale, 0…1
    std::string title() const;     // "head 1", "batch 0, head 1", "weights"
};
// The steps the pictures can draw, and the panels of the first one --steps names
// (weights without --steps): the full matrices of every head (steps with t or tile
// are partial and left out). Throws InputError when --steps names no drawable
// step, or the trace has none of it.
const std::vector<StepName>& heatmap_steps();
std::vector<HeatmapPanel> heatmap_panels(const Trace& trace, const RenderOptions& options, const std::string& what);

}  // namespace attn_trace
