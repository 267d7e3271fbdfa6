#include "attn_trace/render_table.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/render.hpp"

namespace attn_trace {

namespace {

// Summaries keep the first `head` and last `tail` indices when there are more than `limit`.
struct Window {
    std::size_t limit, head, tail;
};
constexpr Window row_window{16, 6, 3};
constexpr Window column_window{12, 5, 3};

std::vector<std::size_t> visible_indices(std::size_t count, Window window, bool full) {
    std::vector<std::size_t> out;
    if (full || count <= window.limit) {
        for (std::size_t i = 0; i < count; ++i) out.push_back(i);
        return out;
    }
    for (std::size_t i = 0; i < window.head; ++i) out.push_back(i);
    out.push_back(gap);
    for (std::size_t i = count - window.tail; i < count; ++i) out.push_back(i);
    return out;
}

bool all_integers(const Matrix& m) {
    return std::all_of(m.data().begin(), m.data().end(), [](double x) { return !std::isfinite(x) || (std::fabs(x) < 1e15 && x == std::floor(x)); });
}

}  // namespace

std::vector<std::size_t> visible_rows(std::size_t count, bool full) { return visible_indices(count, row_window, full); }
std::vector<std::size_t> visible_columns(std::size_t count, bool full) { return visible_indices(count, column_window, full); }

std::string row_label(const Step& step, std::size_t i) {
    return i == gap ? "…" : (i < step.row_labels.size() ? step.row_labels[i] : std::to_string(i));
}
std::string column_label(const Step& step, std::size_t j) {
    return j == gap ? "…" : (j < step.column_labels.size() ? step.column_labels[j] : std::to_string(j));
}

std::string step_title(const Step& step) {
    std::string where;
    for (const auto& part : step_place(step)) where += "  " + part.key + (part.key == "t" ? " = " : " ") + part.value;
    return fmt::format("{}  {}  {}{}", shown_name(step), defined_as(step_symbol(step.name), step.formula), shape_string(step.values), where);
}

CellFormat::CellFormat(const Matrix& values, int precision) : integers_(all_integers(values)), precision_(precision) {}

std::string CellFormat::operator()(double x) const {
    return integers_ && std::isfinite(x) ? fmt::format("{}", static_cast<long long>(x)) : format_number(x, precision_);
}

bool is_blocked_cell(const Step& step, double x) {
    return (std::isinf(x) && x < 0) || (x == 0.0 && (step.name == StepName::weights || step.name == StepName::exp));
}

std::string pad_left(const std::string& text, std::size_t width) {
    const std::size_t w = display_width(text);
    return w >= width ? text : std::string(width - w, ' ') + text;
}
std::string pad_right(const std::string& text, std::size_t width) {
    const std::size_t w = display_width(text);
    return w >= width ? text : text + std::string(width - w, ' ');
}

Rgb weight_colour(double weight) {
    constexpr Rgb low{247, 251, 255}, middle{107, 174, 214}, high{8, 48, 107};
    const double w = std::clamp(std::isfinite(weight) ? weight : 0.0, 0.0, 1.0);
    const Rgb& a = w < 0.5 ? low : middle;
    const Rgb& b = w < 0.5 ? middle : high;
    const double t = w < 0.5 ? w / 0.5 : (w - 0.5) / 0.5;
    auto mix = [t](int x, int y) { return static_cast<int>(std::lround(x + (y - x) * t)); };
    return {mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b)};
}

bool HeatmapPanel::masked(std::size_t i, std::size_t j) const {
    const double x = values->values(i, j);
    if (values->name == StepName::weights && x != 0.0) return false;
    if (mask) return std::isinf(mask->values(i, j)) && mask->values(i, j) < 0;
    return values->name == StepName::weights || (std::isinf(x) && x < 0);
}

double HeatmapPanel::shade(double x) const {
    if (!std::isfinite(x)) return x > 0 ? 1.0 : 0.0;
    return high > low ? (x - low) / (high - low) : 0.5;
}

std::string HeatmapPanel::title() const {
    std::vector<std::string> where;  // panels are whole matrices: batch and head only
    for (const auto& part : step_place(values->head, values->batch, std::nullopt, std::nullopt)) where.push_back(part.key + " " + part.value);
    return where.empty() ? shown_name(*values) : fmt::format("{}", fmt::join(where, ", "));
}

const std::vector<StepName>& heatmap_steps() {
    static const std::vector<StepName> steps = {StepName::scores, StepName::scaled, StepName::capped, StepName::masked, StepName::weights};
    return steps;
}

std::vector<HeatmapPanel> heatmap_panels(const Trace& trace, const RenderOptions& options, const std::string& what) {
    // The first drawable step --steps names; weights when --steps is left out.
    const auto named = std::find_first_of(options.steps.begin(), options.steps.end(), heatmap_steps().begin(), heatmap_steps().end());
    if (!options.steps.empty() && named == options.steps.end())
        throw InputError(fmt::format("{} draws one per-head step of the full trace: name one of {} in ⟦steps⟧ (weights when ⟦steps⟧ is left "
                                     "out), found ⟦steps⟧ {}",
                                     what, fmt::join(heatmap_steps(), ", "), fmt::join(options.steps, ",")));
    const StepName name = options.steps.empty() ? StepName::weights : *named;
    RenderOptions only_this = options;
    only_this.steps = {name};
    std::vector<HeatmapPanel> panels;
    double low = std::numeric_limits<double>::infinity(), high = -low;
    for (const Step* step : selected_steps(trace, only_this)) {
        if (step->t || step->tile) continue;
        const Step* mask = trace.find(StepName::mask, step->head, step->batch, std::nullopt, std::nullopt);
        panels.push_back({step, mask && mask->values.rows() == step->values.rows() && mask->values.cols() == step->values.cols() ? mask : nullptr});
        for (double x : step->values.data())
            if (std::isfinite(x)) low = std::min(low, x), high = std::max(high, x);
    }
    if (panels.empty()) throw InputError(fmt::format("{} draws the full {} matrix of each head, and this {} trace has none", what, name, trace.command));
    // Weights keep their natural 0…1 scale, so pictures of two problems compare.
    if (name != StepName::weights && low <= high)
        for (auto& panel : panels) panel.low = low, panel.high = high;
    return panels;
}

}  // namespace attn_trace
