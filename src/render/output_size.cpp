// estimate_output: the size of what a renderer will write, from the steps it
// will print and the cells of each it shows (summaries keep a corner of a large
// matrix unless --full). Figures measured on this project's renderers: a text cell
// is its decimals plus about 6 bytes of padding and sign, a JSON number about 20
// bytes at full precision; a step's header, labels and brackets about 150 bytes.
// The JSON renderer builds a document tree before writing it: about 2.5 KB per
// step (its keys are ordered maps) and 16 bytes a number beside the text (tiled's
// 450 000 steps of 2 × 2 at n = 600: 92 MB written, 1.4 GB held).
#include <stdexcept>

#include "attn_trace/render.hpp"
#include "attn_trace/render_table.hpp"

namespace attn_trace {

namespace {

// How a format prints: all cells or a summary, bytes per cell and per row.
struct FormatCost {
    bool every_cell;
    double per_cell, per_row;
    double tree_per_step, tree_per_cell;  // what the JSON document tree holds
};

FormatCost cost_of(Format format, int precision) {
    const double decimals = precision + 6.0;
    switch (format) {
        case Format::text: return {false, decimals, 12, 0, 0};  // and the heatmap's grid
        case Format::json: return {true, 20, 4, 2500, 16};
        case Format::csv: return {true, 20, 12, 0, 0};
        case Format::markdown:
        case Format::latex: return {false, decimals + 3, 16, 0, 0};
        // html: the rounded number, the full one in its title, the indices, the heat.
        case Format::html: return {false, decimals + 75, 12, 0, 0};
    }
    throw std::logic_error("estimate_output: a Format outside the table");
}

}  // namespace

OutputEstimate estimate_output(const Trace& trace, Format format, const RenderOptions& options) {
    const FormatCost cost = cost_of(format, options.precision);
    const bool full = options.full || cost.every_cell;
    OutputEstimate e;
    constexpr double per_step = 150;
    for (const Step* step : selected_steps(trace, options)) {
        const double rows = static_cast<double>(visible_rows(step->values.rows(), full).size());
        const double cols = static_cast<double>(visible_columns(step->values.cols(), full).size());
        e.steps += 1;
        e.cells += static_cast<std::size_t>(rows * cols);
        e.bytes += per_step + rows * (cost.per_row + cols * cost.per_cell);
        e.memory += cost.tree_per_step + rows * cols * cost.tree_per_cell;
    }
    // The text is built in memory, then written: it is held once, and briefly twice.
    e.memory += 2 * e.bytes;
    return e;
}

}  // namespace attn_trace
