#pragma once
// The HTML page (`--format html`): one self-contained file, its style sheet and
// script inline, nothing fetched from the network. The page shows every step as a
// heat-coloured table and, where the caller computed them, the explanation of each
// cell on a click. The explanations come from the teach layer (explain_cells), so
// this layer stays below it: it is handed them as text.
#include <string>
#include <vector>

#include "attn_trace/render.hpp"
#include "attn_trace/trace.hpp"

namespace attn_trace {

// What a click on a cell shows: for each step of the trace (by its index in
// trace.steps), the explanation of each cell, row-major; a step with no vector, or
// a cell with "", has none, and the page shows `note` instead (why there is none).
struct CellExplanations {
    std::vector<std::vector<std::string>> steps;
    std::string note;
};

// A step's heat colouring (docs/COMMANDS.md#output-formats): a step with a negative value
// is signed and takes the diverging scale (±max |x|, so that the sign shows); weights take
// the fixed scale 0…1, as the heatmaps and the SVG do, so that a weight has one colour in
// every head, decode step and tile; any other non-negative step its finite range. The run
// page and the model view page (model_page.cpp) colour by it.
struct HeatScale {
    double low = 0, high = 0, largest = 0;  // finite min, max and max |x|
    bool fixed = false;                      // weights: 0…1
    explicit HeatScale(const Step& step);
    bool diverging() const { return low < 0; }
    // Where x sits on its scale, 0…1: on the diverging one, how far from 0 toward ±max |x|.
    double operator()(double x) const;
};

// Text as HTML (or SVG, XML) character data or an attribute value: & < > " ' escaped.
std::string html_escape(const std::string& text);

// A whole page around `content` (the body's elements): the doctype, the title,
// the style sheet (light and dark, and one for print) and the script (step
// navigator, head tabs, the tile or token slider, the explanation panel). The
// script does nothing where the page has no navigator, so a worksheet (an
// exercise, an explanation: body_class "sheet") uses the same frame. Controls
// that need the script carry `hidden data-js`, and the script shows them.
std::string html_page(const std::string& title, const std::string& body_class, const std::string& content);

// The selected steps as sections, each a heading (name, formula, shape, place)
// and a table with token labels, heat colouring (diverging around 0 for a step
// with negative values, sequential otherwise), −∞ and masked cells hatched, exact
// zeros marked, and a legend line for the signed scale and the hatching; a
// summary of a large matrix unless options.full. Every −∞ is written "−∞"
// (U+2212), in cells and titles. `explanations` may be null (a worksheet's tables
// are not clickable). `forward`, where given, is the forward trace of a gradient
// trace (grad's): its masked steps tell which of the gradients' zeros the mask
// makes, and those are hatched as the weights' are.
std::string html_step_sections(const Trace& trace, const RenderOptions& options, const CellExplanations* explanations, const Trace* forward = nullptr);

// The trace's page: title, problem line and notes, the navigator, the sections,
// the trace's numbers and the explanation panel.
std::string render_html(const Trace& trace, const RenderOptions& options, const CellExplanations& explanations = {}, const Trace* forward = nullptr);

}  // namespace attn_trace
