// How a trace command's result is shown, the same for every front: the render options
// checked against the problem, the output measured against the budget before it is
// written, and decode's text as one line per step.
#include <algorithm>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/nearest_word.hpp"
#include "attn_trace/render_html.hpp"
#include "attn_trace/size_text.hpp"
#include "attn_trace/trace_commands.hpp"

namespace attn_trace {

RenderOptions render_options(const OutputRequest& o, const Problem& problem) {
    if (o.head && (*o.head < 0 || *o.head >= problem.heads))
        throw InputError(fmt::format("⟦head⟧ {}: the problem has {} head{} (0 to {})", *o.head, problem.heads, problem.heads == 1 ? "" : "s", problem.heads - 1));
    if (o.batch && (*o.batch < 0 || static_cast<std::size_t>(*o.batch) >= problem.batch))
        throw InputError(fmt::format("⟦batch⟧ {}: the problem has {} sequence{} (0 to {})", *o.batch, problem.batch, problem.batch == 1 ? "" : "s",
                                     problem.batch - 1));
    if (o.math && o.format != Format::markdown)
        throw InputError(fmt::format("⟦math⟧ {} sets how Markdown writes maths: it needs ⟦format⟧ markdown, not {}",
                                     math_style_names()[static_cast<std::size_t>(*o.math)], o.format));
    RenderOptions r;
    r.precision = o.precision;
    r.full = o.full;
    r.color = o.format == Format::text && o.color;
    r.head = o.head;
    r.batch = o.batch;
    r.math = o.math.value_or(MathStyle::dollars);
    for (const std::string& name : o.steps) {
        const auto step = find_step(name);
        if (!step)
            throw InputError(fmt::format("⟦steps⟧: unknown step '{}'{}: expected some of {}", name, did_you_mean(name, step_names()),
                                         fmt::join(step_names(), ", ")));
        r.steps.push_back(*step);
    }
    return r;
}

namespace {

// Steps asked for that this trace does not produce (after head and batch) are an error
// listing what it does produce, never an empty output
// (docs/COMMANDS.md#options-shared-by-run-decode-and-tiled).
void check_steps_present(const Trace& trace, const RenderOptions& r, const Problem& problem) {
    for (const auto& name : r.steps) {
        RenderOptions just_this = r;
        just_this.steps = {name};
        if (!selected_steps(trace, just_this).empty()) continue;
        std::vector<StepName> produced;
        RenderOptions every = r;
        every.steps.clear();
        for (const Step* step : selected_steps(trace, every))
            if (std::find(produced.begin(), produced.end(), step->name) == produced.end()) produced.push_back(step->name);
        std::string hint;
        const bool cache = name == StepName::k_cache || name == StepName::v_cache;
        if (name == StepName::scores && (trace.command == "decode" || trace.command == "tiled"))
            hint = fmt::format(" ({} calls s · Q Kᵀ + M 'masked', as run does: use ⟦steps⟧ masked)", trace.command);
        else if (cache && r.head && problem.kv_heads < problem.heads)
            hint = fmt::format(" ({} carries the KV head: query head {} reads KV head {}, so use ⟦head⟧ {})", name, *r.head,
                               *r.head / (problem.heads / problem.kv_heads), *r.head / (problem.heads / problem.kv_heads));
        else if (name == StepName::concat || name == StepName::final)
            hint = " (concat needs more than one head or W_O; final needs W_O)";
        else if (!trace.notes_of(NoteKind::fast_path).empty())
            hint = " (run took the fast path, which keeps only row_max, row_sum and out: its note says why; the full trace of a smaller "
                   "problem has every step)";
        throw InputError(fmt::format("⟦steps⟧ {}: this {} trace{} has no '{}' step{}; it has: {}", name, trace.command,
                                     r.head ? fmt::format(" (head {})", *r.head) : "", name, hint, fmt::join(produced, ", ")));
    }
}

// What the heatmap and the SVG draw with: the printed trace's options, or for a pictured
// trace of other steps (grad's forward) the steps narrowed to those it has (none left:
// its weights).
RenderOptions picture_options(const RenderOptions& r, const Trace* pictured) {
    RenderOptions options = r;
    if (pictured)
        std::erase_if(options.steps, [&](StepName name) {
            return std::none_of(pictured->steps.begin(), pictured->steps.end(), [&](const Step& step) { return step.name == name; });
        });
    return options;
}

// "[0.5030 0.2484 0.2484]", long rows as their first five and last three numbers.
std::string row_text(const Matrix& m, std::size_t row, const RenderOptions& r) {
    std::vector<std::string> cells;
    for (std::size_t j = 0; j < m.cols(); ++j) {
        if (!r.full && m.cols() > 12 && j == 5) {
            cells.push_back("…");
            j = m.cols() - 4;
            continue;
        }
        cells.push_back(format_number(m(row, j), r.precision));
    }
    return fmt::format("[{}]", fmt::join(cells, " "));
}

// decode's text: one line per query row and head: its step, the cache length, the weight
// row, the output row.
std::string decode_step_lines(const Trace& trace, const RenderOptions& r) {
    std::string text = "\ndecode steps: t, cache length after appending, weights over the cache, output row\n";
    for (const Step& weights : trace.steps) {
        if (weights.name != StepName::weights || !weights.t || (r.head && weights.head != r.head)) continue;
        const Step* out = trace.find(StepName::out, weights.head, weights.batch, weights.t, std::nullopt);
        const int first = *weights.t + 1 - static_cast<int>(weights.values.rows());
        for (std::size_t i = 0; i < weights.values.rows(); ++i) {
            const std::string who = i < weights.row_labels.size() ? fmt::format(" ({})", weights.row_labels[i]) : "";
            text += fmt::format("t = {}{}{}{}{}  cache {}  weights {}  out {}\n", first + static_cast<int>(i), who,
                                weights.values.rows() > 1 ? " prefill" : "", weights.batch ? fmt::format("  batch {}", *weights.batch) : "",
                                trace.problem.heads > 1 ? fmt::format("  head {}", *weights.head) : "", weights.values.cols(),
                                row_text(weights.values, i, r), out ? row_text(out->values, i, r) : "");
        }
    }
    return text;
}

// decode's text without steps asked for prints the matrices without t (stacked out,
// concat, final) as tables and every step as a line; the heatmap and SVG draw the whole.
bool decode_summary(const TraceResult& result, const OutputRequest& o) {
    return result.trace.command == "decode" && o.format == Format::text && o.steps.empty() && !o.heatmap;
}

std::string render_shown(const Trace& trace, const TraceResult& result, const OutputRequest& o, const RenderOptions& r, const Trace* drawn,
                         const RenderOptions& drawn_options) {
    const Problem& problem = result.problem;
    if (result.pitfall) {
        if (o.format != Format::text || o.heatmap)
            throw InputError("⟦pitfall⟧ prints the two computations side by side as text: leave out ⟦format⟧ and ⟦heatmap⟧");
        return render_pitfall(*result.pitfall, r);
    }
    if (o.heatmap) {
        if (o.format != Format::text) throw InputError(fmt::format("⟦heatmap⟧ draws in the terminal: leave out ⟦format⟧ {}", o.format));
        refuse_large_output(problem, *drawn, Format::text, drawn_options, o.budget);
        return render_heatmap(*drawn, drawn_options);
    }
    refuse_large_output(problem, trace, o.format, r, o.budget);
    if (o.format != Format::html) return render(trace, o.format, r);
    // The page carries every cell's explanation (while the page is small enough), which the
    // estimate above did not count: the page is measured whole before it is returned. Its
    // explanations are at most page_explained_cells texts of a few kilobytes each.
    const Trace* forward = result.forward ? &*result.forward : nullptr;
    std::string page = render_html(trace, r, explain_cells(trace, problem, result.run, selected_steps(trace, r), result.page_source, o.precision), forward);
    if (page.size() > o.budget.output)
        throw InputError(fmt::format("{}: the {} page would be {} with its cells' explanations; the limit is {} (⟦max_output⟧): choose what to "
                                     "show with ⟦steps⟧, ⟦head⟧ or ⟦batch⟧",
                                     problem.file, trace.command, size_text(static_cast<double>(page.size())),
                                     size_text(static_cast<double>(o.budget.output))));
    return page;
}

}  // namespace

void require_standalone_format(Format format, bool standalone) {
    if (standalone && format != Format::latex)
        throw InputError(fmt::format("⟦standalone⟧ makes LaTeX a whole document: it needs ⟦format⟧ latex, not {}", format));
}

std::string written_document(const std::string& text, Format format, bool standalone) {
    require_standalone_format(format, standalone);
    return standalone ? latex_document(text) : text;
}

std::string render_trace_output(const TraceResult& result, const OutputRequest& o) {
    require_standalone_format(o.format, o.standalone);  // before the trace is rendered
    const RenderOptions r = render_options(o, result.problem);
    if (decode_summary(result, o)) {
        Trace summary = result.trace;
        std::erase_if(summary.steps, [](const Step& step) { return step.t.has_value(); });
        check_steps_present(summary, r, result.problem);
        return render_shown(summary, result, o, r, nullptr, r) + decode_step_lines(result.trace, r);
    }
    check_steps_present(result.trace, r, result.problem);
    const Trace* drawn = result.pictured ? &*result.pictured : &result.trace;
    return written_document(render_shown(result.trace, result, o, r, drawn, picture_options(r, result.pictured ? &*result.pictured : nullptr)), o.format,
                            o.standalone);
}

std::string render_trace_svg(const TraceResult& result, const OutputRequest& o) {
    const RenderOptions r = render_options(o, result.problem);
    const Trace* pictured = result.pictured ? &*result.pictured : nullptr;
    return render_weights_svg(pictured ? *pictured : result.trace, picture_options(r, pictured));
}

}  // namespace attn_trace
