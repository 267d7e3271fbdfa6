// The trace as a page: the steps as tables people can click, and the navigator
// the page's script drives. Every number is written twice: rounded in the cell as
// the text renderer rounds it, and in full (the shortest text that reads back to
// the same double) in its title, which the browser shows on hover and a test reads.
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn_trace/number_text.hpp"
#include "attn_trace/render_html.hpp"
#include "attn_trace/render_table.hpp"

namespace attn_trace {

namespace {

// Where a step sits, as one key: the masked step of the same place tells which
// zeros of weights (or exp, dropped) are the mask's.
using Place = std::tuple<int, int, int, int, int>;
Place place_of(const Step& s) {
    return {s.batch.value_or(-1), s.head.value_or(-1), s.t.value_or(-1), s.tile ? (*s.tile)[0] : -1, s.tile ? (*s.tile)[1] : -1};
}

// A number as the page writes it: −∞ and ∞ as the cells write them (U+2212, not
// the JSON's "-inf"), a finite one as the shortest text that reads back to it.
// A zero's sign says nothing to a reader (a blocked gradient is −0 as often as 0): both are "0".
std::string page_number(double x) { return std::isinf(x) ? (x < 0 ? "−∞" : "∞") : x == 0 ? "0" : full_precision_text(x); }

// The decode token or the tile a step belongs to, as the slider's positions: the
// distinct t (or tile) values in the order the trace has them.
struct Stages {
    std::vector<std::string> labels;
    std::map<std::pair<int, int>, std::size_t> index;  // (t, -1) or (query block, key tile)
    std::optional<std::size_t> of(const Step& s) const {
        if (!s.t && !s.tile) return std::nullopt;
        const auto found = index.find(s.tile ? std::pair{(*s.tile)[0], (*s.tile)[1]} : std::pair{*s.t, -1});
        return found == index.end() ? std::nullopt : std::optional(found->second);
    }
};

Stages stages_of(const std::vector<const Step*>& steps) {
    Stages stages;
    const bool tiles = std::any_of(steps.begin(), steps.end(), [](const Step* s) { return s->tile.has_value(); });
    for (const Step* s : steps) {
        if (tiles ? !s->tile : !s->t) continue;
        const std::pair<int, int> key = tiles ? std::pair{(*s->tile)[0], (*s->tile)[1]} : std::pair{*s->t, -1};
        if (stages.index.count(key)) continue;
        stages.index[key] = stages.labels.size();
        stages.labels.push_back(tiles ? fmt::format("tile [{}, {}]: query block {}, key tile {}", key.first, key.second, key.first, key.second)
                                      : fmt::format("t = {}", key.first));
    }
    return stages;
}

std::string step_heading(const Step& step) {
    std::string where;
    for (const auto& part : step_place(step)) where += (where.empty() ? "" : ", ") + part.key + (part.key == "t" ? " = " : " ") + part.value;
    return fmt::format("<h2><code>{}</code> <span class=\"formula\">{}</span> <span class=\"shape\">{}</span>{}</h2>", html_escape(shown_name(step)),
                       html_escape(defined_as(step_symbol(step.name), step.formula)), shape_string(step.values), where.empty() ? "" : " <span class=\"place\">" + html_escape(where) + "</span>");
}

// The gradients that are exactly 0 where the mask blocked the weight (A = 0 there,
// and the softmax backward multiplies by A): their zeros are the mask's as the
// weights' are.
bool zero_where_blocked(StepName name) {
    return name == StepName::grad_masked || name == StepName::grad_capped || name == StepName::grad_scaled || name == StepName::grad_scores;
}

// A cell the mask blocked: −∞, or a 0 where the masked step of its place is −∞
// (without one, a 0 of weights or exp).
bool blocked_cell(const Step& step, std::size_t i, std::size_t j, const Step* masked) {
    const double x = step.values(i, j);
    return (std::isinf(x) && x < 0) || (x == 0.0 && (masked ? masked->values(i, j) == -INFINITY : is_blocked_cell(step, x)));
}

// A cell, `shown` its number as the cell writes it.
std::string cell_html(const Step& step, std::size_t i, std::size_t j, const std::string& shown, const HeatScale& heat, const Step* masked, bool clickable) {
    const double x = step.values(i, j);
    std::string classes;
    const bool blocked = blocked_cell(step, i, j, masked);
    if (blocked) classes += " b";
    if (x == 0.0) classes += " z";
    std::string style;
    if (std::isfinite(x) && !blocked) {
        const double h = heat(x);
        style = fmt::format(" style=\"--h:{:.2f}\"", h);
        if (heat.diverging()) classes += x < 0 ? " neg" : " pos";
        if (h > 0.55) classes += " hi";
    }
    return fmt::format("<td data-i=\"{}\" data-j=\"{}\" title=\"{}\"{}{}{}>{}</td>", i, j, page_number(x), classes.empty() ? "" : " class=\"" + classes.substr(1) + "\"",
                       style, clickable ? " tabindex=\"0\"" : "", shown);
}

// The lines under a table that say what its colours and hatching mean.
std::string legend(const Step& step, const HeatScale& heat, bool hatched, int precision) {
    std::string out;
    if (heat.diverging())
        // 0 is --zero: white, but near-black in the dark scheme; the page shows the span of its scheme.
        out += fmt::format("<p class=\"legend\">signed: blue below 0, <span class=\"in-light\">white</span><span class=\"in-dark\">near-black</span> at 0, red above 0, "
                           "the scale ±{} (max |x|)</p>\n",
                           format_number(heat.largest, precision));
    if (heat.fixed) out += "<p class=\"legend\">weights: one scale for every head and step, 0 (light) to 1 (dark)</p>\n";
    if (hatched)
        out += zero_where_blocked(step.name) ? "<p class=\"legend\"><span class=\"swatch b\"></span> hatched: the mask blocked the weight, so this gradient is exactly 0 by construction</p>\n"
                                             : "<p class=\"legend\"><span class=\"swatch b\"></span> hatched: masked (−∞ before the softmax, 0 after it)</p>\n";
    return out;
}

// A step's table as the page writes it, and the characters of the tables' monospace
// font each of its columns needs: the widest text in it, label or cell (the row
// labels' column first).
struct Table {
    std::string html;
    std::vector<std::size_t> widths;
};

Table step_table(const Step& step, const RenderOptions& options, const Step* masked, bool clickable) {
    const Matrix& m = step.values;
    const CellFormat format(m, options.precision);
    const HeatScale heat(step);
    const auto rows = visible_rows(m.rows(), options.full);
    const auto cols = visible_columns(m.cols(), options.full);
    Table table{"<table>\n<thead><tr><th></th>", std::vector<std::size_t>(cols.size() + 1, 0)};
    auto widen = [&](std::size_t column, const std::string& text) { table.widths[column] = std::max(table.widths[column], display_width(text)); };
    for (std::size_t c = 0; c < cols.size(); ++c) {
        const std::string label = column_label(step, cols[c]);
        widen(c + 1, label);
        table.html += "<th scope=\"col\">" + html_escape(label) + "</th>";
    }
    table.html += "</tr></thead>\n<tbody>\n";
    bool hatched = false;
    for (auto i : rows) {
        const std::string label = row_label(step, i);
        widen(0, label);
        table.html += "<tr><th scope=\"row\">" + html_escape(label) + "</th>";
        for (std::size_t c = 0; c < cols.size(); ++c) {
            const std::size_t j = cols[c];
            if (i == gap || j == gap) {
                widen(c + 1, "…");
                table.html += "<td class=\"gap\">…</td>";
                continue;
            }
            const double x = m(i, j);
            const std::string shown = std::isinf(x) ? page_number(x) : format(x);
            widen(c + 1, shown);
            hatched = hatched || blocked_cell(step, i, j, masked);
            table.html += cell_html(step, i, j, shown, heat, masked, clickable);
        }
        table.html += "</tr>\n";
    }
    table.html += "</tbody>\n</table>\n" + legend(step, heat, hatched, options.precision);
    return table;
}

// Whether a table needs a card the page's whole width, as side by side it could be
// as narrow as the grid lets a card be: main's minmax(20em,1fr) in html_page.cpp,
// less the card's .5em of padding each side and its 3px border, about 18.8em. The
// tables' monospace font is .88em, a character about .6 of that (.53em): 35
// characters, and each column's 1em of padding at that size takes 2 of them.
bool needs_whole_width(const Table& table) {
    constexpr std::size_t narrowest_card = 35, column_padding = 2;
    std::size_t width = 0;
    for (std::size_t w : table.widths) width += w + column_padding;
    return width > narrowest_card;
}

// Whether a step's head is a KV head (decode's caches, grad_k and grad_v) read by
// several query heads: the head tabs show it under each of them.
bool of_kv_head(const Trace& trace, const Step& step) {
    return per_kv_head(step.name) && step.head && trace.problem.kv_heads < trace.problem.heads;
}

// The masked step of each place, for the steps whose zeros a mask makes (exp,
// weights, dropped, and the gradients zero_where_blocked) when its shape is theirs.
const Step* masked_for(const std::map<Place, const Step*>& masked, const Step& step) {
    const StepName s = step.name;
    if (s != StepName::exp && s != StepName::weights && s != StepName::dropped && !zero_where_blocked(s)) return nullptr;
    const auto found = masked.find(place_of(step));
    if (found == masked.end()) return nullptr;
    const Matrix& mask = found->second->values;
    return mask.rows() == step.values.rows() && mask.cols() == step.values.cols() ? found->second : nullptr;
}

std::string navigator(const Trace& trace, const std::vector<const Step*>& steps, const Stages& stages) {
    std::vector<int> heads;
    for (const Step* s : steps)
        if (s->head && !of_kv_head(trace, *s) && std::find(heads.begin(), heads.end(), *s->head) == heads.end()) heads.push_back(*s->head);
    std::sort(heads.begin(), heads.end());
    const int group = std::max(1, trace.problem.heads / std::max(1, trace.problem.kv_heads));
    std::string out = fmt::format("<nav id=\"steps\" aria-label=\"steps\" data-group=\"{}\">\n<div hidden data-js><button id=\"prev\" title=\"previous step (←)\">← previous</button> "
                                  "<button id=\"next\" title=\"next step (→)\">next →</button></div>\n",
                                  group);
    if (heads.size() > 1) {
        out += "<div class=\"tabs\" role=\"group\" aria-label=\"heads\" hidden data-js><button data-head=\"all\" aria-pressed=\"true\">all heads</button>";
        for (int h : heads) out += fmt::format("<button data-head=\"{}\" aria-pressed=\"false\">head {}</button>", h, h);
        out += "</div>\n";
    }
    if (!stages.labels.empty())
        out += fmt::format(
            "<label class=\"stage\" hidden data-js>{} <input type=\"range\" id=\"stage\" min=\"0\" max=\"{}\" value=\"0\" data-labels=\"{}\"> <output id=\"stage-label\">{}</output></label>\n",
            trace.command == "decode" ? "token" : "tile", stages.labels.size() - 1, html_escape(nlohmann::json(stages.labels).dump()),
            html_escape(stages.labels.front()));
    out += "<ol>\n";
    for (const Step* s : steps) {
        std::string where;
        for (const auto& part : step_place(*s)) where += " " + part.key + (part.key == "t" ? "=" : " ") + part.value;
        out += fmt::format("<li><a href=\"#s{}\" data-step=\"{}\">{}<small>{}</small></a></li>\n", s - trace.steps.data(), s - trace.steps.data(),
                           html_escape(shown_name(*s)), html_escape(where));
    }
    return out + "</ol>\n</nav>\n";
}

// The explanations as one JSON object, step index → cells. Inside a <script>
// element the HTML parser looks for "</script" and, after "<!--", for "<script":
// every < (and > and &) is written as a JSON escape, so no text of a label or
// explanation can end the element or switch the parser's state. The explanations are
// explain's terminal text, which writes ASCII -inf; the page writes −∞, as its cells do.
std::string explanations_json(const CellExplanations& explanations) {
    nlohmann::json out = nlohmann::json::object();
    for (std::size_t k = 0; k < explanations.steps.size(); ++k) {
        if (explanations.steps[k].empty()) continue;
        std::vector<std::string> cells = explanations.steps[k];
        for (std::string& cell : cells)
            for (std::size_t at = cell.find("-inf"); at != std::string::npos; at = cell.find("-inf", at)) cell.replace(at, 4, "−∞");
        out[std::to_string(k)] = cells;
    }
    std::string text;
    for (char c : out.dump()) text += c == '<' ? "\\u003c" : c == '>' ? "\\u003e" : c == '&' ? "\\u0026" : std::string(1, c);
    return text;
}

}  // namespace

HeatScale::HeatScale(const Step& step) {
    bool any = false;
    for (double x : step.values.data()) {
        if (!std::isfinite(x)) continue;
        low = any ? std::min(low, x) : x;
        high = any ? std::max(high, x) : x;
        largest = std::max(largest, std::abs(x));
        any = true;
    }
    if (step.name == StepName::weights && low >= 0 && high <= 1) {
        fixed = true;
        low = 0;
        high = 1;
    }
}

double HeatScale::operator()(double x) const {
    if (diverging()) return std::abs(x) / largest;
    return high > low ? (x - low) / (high - low) : 0.0;
}

std::string html_step_sections(const Trace& trace, const RenderOptions& options, const CellExplanations* explanations, const Trace* forward) {
    const auto steps = selected_steps(trace, options);
    const Stages stages = stages_of(steps);
    std::map<Place, const Step*> masked;
    for (const Trace* source : {&trace, forward})
        if (source)
            for (const Step& s : source->steps)
                if (s.name == StepName::masked) masked.emplace(place_of(s), &s);
    std::string out;
    for (const Step* s : steps) {
        const std::size_t k = static_cast<std::size_t>(s - trace.steps.data());
        const bool clickable = explanations && k < explanations->steps.size() && !explanations->steps[k].empty();
        std::string data = fmt::format(" data-step=\"{}\" data-name=\"{}\" data-cols=\"{}\"", k, html_escape(shown_name(*s)), s->values.cols());
        if (s->head) data += fmt::format(" data-{}head=\"{}\"", of_kv_head(trace, *s) ? "kv-" : "", *s->head);
        if (const auto stage = stages.of(*s)) data += fmt::format(" data-stage=\"{}\"", *stage);
        // A table too wide for a card beside another takes the page's whole width
        // (docs/COMMANDS.md#output-formats); narrower ones sit side by side.
        const Table table = step_table(*s, options, masked_for(masked, *s), clickable);
        const std::string id = explanations ? fmt::format(" id=\"s{}\"", k) : "";
        out += fmt::format("<section class=\"step{}\"{}{}>\n{}\n{}</section>\n", needs_whole_width(table) ? " wide" : "", id, data, step_heading(*s), table.html);
    }
    return out;
}

std::string render_html(const Trace& trace, const RenderOptions& options, const CellExplanations& explanations, const Trace* forward) {
    const auto& p = trace.problem;
    const std::string title = fmt::format("attn-trace {}{}", trace.command, p.title.empty() ? "" : ": " + p.title);
    std::string body = "<header>\n<h1>" + html_escape(title) + "</h1>\n<p class=\"problem\">" + html_escape(describe_problem(p)) + "</p>\n";
    if (!trace.notes.empty()) {
        body += "<ul class=\"notes\">\n";
        for (const auto& note : trace.notes) body += "<li>" + html_escape(note_text(note)) + "</li>\n";
        body += "</ul>\n";
    }
    body += "</header>\n";
    const auto steps = selected_steps(trace, options);
    body += navigator(trace, steps, stages_of(steps));
    body += "<main>\n" + html_step_sections(trace, options, &explanations, forward);
    if (!trace.numbers.empty()) {
        body += "<section class=\"numbers\"><h2>numbers</h2>\n<dl>\n";
        for (const auto& [key, value] : trace.numbers)
            body += fmt::format("<dt>{}</dt><dd title=\"{}\">{}</dd>\n", html_escape(key), page_number(value),
                               std::isinf(value) ? page_number(value) : format_trace_number(value));
        body += "</dl>\n</section>\n";
    }
    body += "</main>\n";
    const std::string none = explanations.note.empty() ? "This step's cells have no explanation on this page." : explanations.note;
    body += fmt::format(
        "<aside aria-live=\"polite\" hidden data-js>\n<h2 id=\"explain-title\">Explanation</h2>\n<p class=\"muted\">Click a cell, or focus it with Tab and press Enter, to see the "
        "arithmetic behind its number. ← and → move through the steps.</p>\n<p class=\"muted\" id=\"explain-full\"></p>\n<pre id=\"explain-text\" data-none=\"{}\"></pre>\n</aside>\n",
        html_escape(none));
    body += "<script type=\"application/json\" id=\"explanations\">" + explanations_json(explanations) + "</script>\n";
    return html_page(title, "", body);
}

}  // namespace attn_trace
