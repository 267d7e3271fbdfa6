#pragma once
// Renderers: a trace in, text for people or JSON for scripts out.
#include <optional>
#include <string>
#include <vector>

#include "attn_trace/trace.hpp"

namespace attn_trace {

struct RenderOptions {
    int precision = 4;                 // decimals in text
    bool full = false;                 // text: every row and column, no "…"
    bool color = false;                // text: ANSI colours (only on a terminal)
    std::vector<std::string> steps;    // only these step names; empty = all
    std::optional<int> head;           // only this head's per-head steps
};

// The steps that pass the --steps / --head filters, in trace order.
std::vector<const Step*> selected_steps(const Trace& trace, const RenderOptions& options);

// The formats `--format` accepts, and the renderer for each.
const std::vector<std::string>& render_formats();
std::string render(const Trace& trace, const std::string& format, const RenderOptions& options);

std::string render_text(const Trace& trace, const RenderOptions& options);
std::string render_json(const Trace& trace, const RenderOptions& options);

// One number as the text renderer writes it: "0" for an exact zero, "-inf",
// "nan", otherwise fixed with `precision` decimals.
std::string format_number(double x, int precision);

}  // namespace attn_trace
