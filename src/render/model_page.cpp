// The model view page: every layer and head of a model on one sequence as a grid of
// small heatmaps, and any head's trace a click away (docs/COMMANDS.md#the-model-view-page).
//
// Why the page carries numbers, not tables: a run page writes every cell twice (rounded,
// and in full in its title) and every explanation as text, a few kilobytes a cell; a
// BERT-base page (144 heads, 20 tokens) written so would be hundreds of megabytes. So the
// page carries each head's steps once, as the bytes of their values (hex of little-endian
// float32 where every value of the step is one, else float64: exact either way), with
// what its script needs to draw them as the run page does: each step's formula, its heat
// scale and how its cells are rounded, all decided here. A cell's explanation lists the
// cells of the head's trace it is computed from (the operands below); the dot products
// of scores and out need the layer's Q, K and V, which the page leaves out: `explain`
// names where their whole arithmetic is.
#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn_trace/model_view.hpp"
#include "attn_trace/number_text.hpp"
#include "attn_trace/render_html.hpp"
#include "attn_trace/render_table.hpp"

namespace attn_trace {

namespace {

using json = nlohmann::ordered_json;

// The bytes of a step's values as hex: float32 when every value is exactly a float32
// (a run in f32, f16 or bf16), else float64. Either reads back to the same doubles. A
// step of one value throughout (the mask of a layer without one) is that value alone.
json step_values(const Matrix& m) {
    const auto& v = m.data();
    if (!v.empty() && std::all_of(v.begin(), v.end(), [&v](double x) { return x == v.front() && !std::signbit(x) == !std::signbit(v.front()); }))
        return {{"type", "fill"}, {"fill", number_json(v.front())}};
    const bool f32 = std::all_of(m.data().begin(), m.data().end(), [](double x) { return std::isnan(x) || static_cast<double>(static_cast<float>(x)) == x; });
    std::string hex;
    hex.reserve(m.data().size() * (f32 ? 8 : 16));
    auto append = [&hex](const void* bytes, std::size_t count) {
        // Little-endian on every platform attn-trace builds for (x86-64, aarch64).
        const auto* b = static_cast<const unsigned char*>(bytes);
        for (std::size_t i = 0; i < count; ++i) hex += fmt::format("{:02x}", b[i]);
    };
    for (double x : m.data()) {
        if (f32) {
            const float f = static_cast<float>(x);
            append(&f, sizeof f);
        } else {
            append(&x, sizeof x);
        }
    }
    return {{"type", f32 ? "f4" : "f8"}, {"hex", hex}};
}

// The colour scale the run page gives the step (HeatScale), for the script to apply.
json step_heat(const Step& step) {
    const HeatScale heat(step);
    if (heat.fixed) return {{"kind", "fixed"}, {"low", 0}, {"high", 1}};
    if (heat.diverging()) return {{"kind", "diverging"}, {"largest", heat.largest}};
    return {{"kind", "range"}, {"low", heat.low}, {"high", heat.high}};
}

// The cells of the head's trace a cell of `name` is computed from: "ij" the same cell of
// another step, "i0" row i's one value, "i*" all of row i.
json operands(StepName name, const std::vector<Step>& steps) {
    auto has = [&steps](StepName s) { return std::any_of(steps.begin(), steps.end(), [s](const Step& x) { return x.name == s; }); };
    const StepName before_mask = has(StepName::capped) ? StepName::capped : StepName::scaled;
    const StepName z = has(StepName::masked) ? StepName::masked : before_mask;
    auto op = [](StepName s, const char* cells) { return json::array({step_name(s), cells}); };
    switch (name) {
        case StepName::scaled: return json::array({op(StepName::scores, "ij")});
        case StepName::capped: return json::array({op(StepName::scaled, "ij")});
        case StepName::masked: return has(StepName::mask) ? json::array({op(before_mask, "ij"), op(StepName::mask, "ij")}) : json::array({op(before_mask, "ij")});
        case StepName::row_max: return json::array({op(z, "i*")});
        case StepName::exp: return json::array({op(z, "ij"), op(StepName::row_max, "i0")});
        case StepName::row_sum: return json::array({op(StepName::exp, "i*")});
        case StepName::weights: return json::array({op(StepName::exp, "ij"), op(StepName::row_sum, "i0")});
        case StepName::dropped: return json::array({op(StepName::weights, "ij")});
        case StepName::out: return json::array({op(has(StepName::dropped) ? StepName::dropped : StepName::weights, "i*")});
        default: return json::array();
    }
}

json step_json(const Step& step, const std::vector<Step>& steps, const ModelView& view) {
    const Matrix& m = step.values;
    json out = {{"name", shown_name(step)},
                {"formula", defined_as(step_symbol(step.name), step.formula)},
                {"rows", m.rows()},
                {"cols", m.cols()},
                // Rows are queries and columns keys where the step is (n, m); else indices.
                {"tokens", m.rows() == view.n && m.cols() == view.m},
                {"integers", CellFormat(m, 0).integers()},  // as the run page writes the step
                {"heat", step_heat(step)},
                {"operands", operands(step.name, steps)},
                {"dot", step.name == StepName::scores || step.name == StepName::out}};
    out.update(step_values(m));
    return out;
}

// Inside a <script> element every <, > and & is written as a JSON escape, so that no
// token's text can end the element (render_html.cpp's explanations do the same).
std::string script_json(const json& value) {
    std::string text;
    for (char c : value.dump()) text += c == '<' ? "\\u003c" : c == '>' ? "\\u003e" : c == '&' ? "\\u0026" : std::string(1, c);
    return text;
}

constexpr const char* style = R"css(
body.model{display:block;padding:0 1.2em 2em}
body.model header{padding:.8em 0}
.controls{display:flex;gap:.6em;align-items:center;flex-wrap:wrap;margin:.4em 0}
#grid{display:grid;gap:3px;align-items:center;justify-content:start;overflow-x:auto;padding:.3em 0}
#grid .label{color:var(--muted);font-size:.8em;white-space:nowrap;text-align:right;padding-right:.3em}
#grid .column{text-align:center;padding:0}
#grid canvas{display:block;border:1px solid var(--line);cursor:pointer;background:var(--lo)}
#grid canvas.open,#grid canvas:focus-visible{outline:2px solid var(--pick);outline-offset:1px}
#hover{min-height:1.45em;font-family:ui-monospace,monospace;font-size:.9em}
#trace{display:grid;grid-template-columns:minmax(0,1fr) minmax(16em,26em);gap:0 1.2em;margin-top:1em;border-top:1px solid var(--line)}
#trace[hidden]{display:none}
#trace main{grid-area:auto;display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,22em),1fr));gap:.6em 1.2em;align-content:start;padding:.8em 0}
#trace main h2.head{grid-column:1/-1}
#trace aside{grid-area:auto;position:sticky;top:0;align-self:start;max-height:100vh;overflow:auto;padding:.8em 0}
@media (max-width:60em){#trace{display:block}}
)css";

// The grid (canvas cells drawn from each head's weights), the hover line, the lines
// control, and a clicked head's trace: its tables drawn from the numbers with the run
// page's classes (render_html.cpp), each cell rounded as format_number (render.cpp)
// rounds it and explained on a click by its formula and its operands. Its ids are not the
// run page's (explain-text, …): html_page's script, on every page, acts on those.
constexpr const char* script = R"js(
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("model-data").textContent);
  const grid = document.getElementById("grid");
  const hover = document.getElementById("hover");
  const linesButton = document.getElementById("lines");
  const trace = document.getElementById("trace");
  const tables = document.getElementById("trace-steps");
  const panel = document.getElementById("model-explain");
  const panelTitle = document.getElementById("model-explain-title");
  const full = document.getElementById("model-explain-full");
  const cellPx = Math.max(2, Math.min(8, Math.floor(96 / Math.max(data.n, data.m))));
  const specialBox = document.getElementById("special");
  let lines = false;
  // The rows and columns the grid draws: all, or all but the special tokens while they are hidden.
  function shownIndices(count) {
    const out = [];
    for (let k = 0; k < count; ++k) if (!(specialBox && !specialBox.checked && data.special[k])) out.push(k);
    return out;
  }

  function label(list, i) { return i < list.length ? list[i] : String(i); }
  function values(step) {
    if (!step.values && step.type === "fill") {
      const x = typeof step.fill === "string" ? (step.fill === "-inf" ? -Infinity : step.fill === "inf" ? Infinity : NaN) : step.fill;
      step.values = new Float64Array(step.rows * step.cols).fill(x);
    }
    if (!step.values) {
      const hex = step.hex, bytes = new Uint8Array(hex.length / 2);
      for (let b = 0; b < bytes.length; ++b) bytes[b] = parseInt(hex.substr(2 * b, 2), 16);
      step.values = step.type === "f4" ? new Float32Array(bytes.buffer) : new Float64Array(bytes.buffer);
    }
    return step.values;
  }
  function headOf(l, h) { return data.layers[l].heads[h]; }
  function stepOf(head, name) { return head.steps.find(function (s) { return s.name === name; }); }
  function full64(x) { return x === -Infinity ? "−∞" : x === Infinity ? "∞" : x === 0 ? "0" : String(x); }
  // As format_number (render.cpp): exact 0 as "0", fixed decimals, an exponent past 1e10 or where the decimals show nothing.
  function rounded(x, step) {
    if (!isFinite(x)) return isNaN(x) ? "nan" : x < 0 ? "−∞" : "∞";
    if (step.integers) return String(x);
    if (x === 0) return "0";
    const p = data.precision, exp = function () { return x.toExponential(Math.max(1, p - 2)).replace(/e([+-])(\d)$/, "e$10$2"); };
    if (Math.abs(x) >= 1e10) return exp();
    const text = x.toFixed(p);
    return /^[-0.]+$/.test(text) ? exp() : text;
  }
  function colour(name) {
    const c = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return [1, 3, 5].map(function (k) { return parseInt(c.substr(k, 2), 16); });
  }
  function mix(lo, hi, t) { return "rgb(" + lo.map(function (v, k) { return Math.round(v + (hi[k] - v) * t); }).join(",") + ")"; }

  function draw(canvas) {
    const head = headOf(Number(canvas.dataset.l), Number(canvas.dataset.h));
    const w = values(stepOf(head, "weights")), m = data.m, rows = shownIndices(data.n), cols = shownIndices(data.m);
    const ctx = canvas.getContext("2d"), lo = colour("--lo"), hi = colour("--hi");
    if (!lines) {
      canvas.width = cols.length * cellPx; canvas.height = rows.length * cellPx;
      rows.forEach(function (i, r) {
        cols.forEach(function (j, c) { ctx.fillStyle = mix(lo, hi, Math.min(1, Math.max(0, w[i * m + j]))); ctx.fillRect(c * cellPx, r * cellPx, cellPx, cellPx); });
      });
      return;
    }
    // bertviz's lines: queries on the left, keys on the right, each line as dark as its weight.
    const rowPx = Math.max(3, Math.floor(96 / Math.max(data.n, data.m)));
    canvas.width = 72; canvas.height = Math.max(rows.length, cols.length) * rowPx;
    ctx.fillStyle = mix(lo, hi, 0); ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.strokeStyle = mix(lo, hi, 1); ctx.lineWidth = 1;
    rows.forEach(function (i, r) {
      cols.forEach(function (j, c) {
        const a = w[i * m + j];
        if (!(a > 0.01)) return;
        ctx.globalAlpha = Math.min(1, a);
        ctx.beginPath(); ctx.moveTo(4, (r + 0.5) * rowPx); ctx.lineTo(canvas.width - 4, (c + 0.5) * rowPx); ctx.stroke();
      });
    });
    ctx.globalAlpha = 1;
  }
  function drawAll() { grid.querySelectorAll("canvas").forEach(draw); }

  function pointed(canvas, e) {
    const box = canvas.getBoundingClientRect(), l = Number(canvas.dataset.l), h = Number(canvas.dataset.h);
    const head = headOf(l, h), w = values(stepOf(head, "weights"));
    const y = (e.clientY - box.top) / box.height, x = (e.clientX - box.left) / box.width;
    const rows = shownIndices(data.n), cols = shownIndices(data.m);
    const r = Math.floor(y * (lines ? Math.max(rows.length, cols.length) : rows.length));
    if (r < 0 || r >= rows.length) return;
    const i = rows[r];
    // In lines, the pointed query's strongest key among those drawn.
    let j = cols[Math.max(0, Math.min(cols.length - 1, Math.floor(x * cols.length)))];
    if (lines) cols.forEach(function (c) { if (w[i * data.m + c] > w[i * data.m + j]) j = c; });
    const text = "layer " + data.layers[l].layer + ", head " + head.head + ": query " + label(data.queries, i) + " → key " +
                 label(data.keys, j) + ": " + rounded(w[i * data.m + j], {integers: false});
    hover.textContent = text;
    canvas.title = text;
  }

  function cellHtml(step, x, i, j, blocked) {
    const td = document.createElement("td");
    td.dataset.i = i; td.dataset.j = j; td.title = full64(x); td.tabIndex = 0;
    td.textContent = rounded(x, step);
    if (blocked) td.classList.add("b");
    if (x === 0) td.classList.add("z");
    if (isFinite(x) && !blocked) {
      const heat = step.heat;
      const t = heat.kind === "diverging" ? Math.abs(x) / heat.largest : heat.high > heat.low ? (x - heat.low) / (heat.high - heat.low) : 0;
      td.style.setProperty("--h", t.toFixed(2));
      if (heat.kind === "diverging") td.classList.add(x < 0 ? "neg" : "pos");
      if (t > 0.55) td.classList.add("hi");
    }
    return td;
  }

  function openTrace(canvas) {
    const l = Number(canvas.dataset.l), h = Number(canvas.dataset.h), head = headOf(l, h);
    grid.querySelectorAll("canvas.open").forEach(function (c) { c.classList.remove("open"); c.setAttribute("aria-pressed", "false"); });
    canvas.classList.add("open"); canvas.setAttribute("aria-pressed", "true");
    tables.textContent = "";
    const title = document.createElement("h2");
    title.className = "head";
    title.textContent = "layer " + data.layers[l].layer + ", head " + head.head + (data.layers[l].file ? " (" + data.layers[l].file + ")" : "");
    tables.appendChild(title);
    const masked = stepOf(head, "masked");
    head.steps.forEach(function (step, k) {
      const v = values(step), section = document.createElement("section");
      section.className = step.cols > 6 ? "step wide" : "step"; section.dataset.l = l; section.dataset.h = h; section.dataset.k = k;
      section.dataset.name = step.name; section.dataset.cols = step.cols;
      const heading = document.createElement("h2");
      heading.innerHTML = "<code></code> <span class=\"formula\"></span> <span class=\"shape\"></span>";
      heading.children[0].textContent = step.name; heading.children[1].textContent = step.formula;
      heading.children[2].textContent = "(" + step.rows + ", " + step.cols + ")";
      section.appendChild(heading);
      const table = document.createElement("table"), top = table.createTHead().insertRow();
      top.appendChild(document.createElement("th"));
      for (let j = 0; j < step.cols; ++j) { const th = document.createElement("th"); th.scope = "col"; th.textContent = step.tokens ? label(data.keys, j) : String(j); top.appendChild(th); }
      const body = table.createTBody();
      const mv = masked && (step.name === "weights" || step.name === "exp") ? values(masked) : null;
      for (let i = 0; i < step.rows; ++i) {
        const row = body.insertRow(), th = document.createElement("th");
        th.scope = "row"; th.textContent = step.tokens || step.rows === data.n ? label(data.queries, i) : String(i); row.appendChild(th);
        for (let j = 0; j < step.cols; ++j) {
          const x = v[i * step.cols + j];
          const blocked = x === -Infinity || (x === 0 && mv !== null && mv[i * step.cols + j] === -Infinity);
          row.appendChild(cellHtml(step, x, i, j, blocked));
        }
      }
      section.appendChild(table);
      if (step.heat.kind === "fixed") { const p = document.createElement("p"); p.className = "legend"; p.textContent = "weights: one scale for every head, 0 (light) to 1 (dark)"; section.appendChild(p); }
      tables.appendChild(section);
    });
    trace.hidden = false;
    panelTitle.textContent = "Explanation"; full.textContent = ""; panel.textContent = "";
    trace.scrollIntoView({block: "start"});
  }

  function explain(td) {
    const section = td.closest("section.step"), l = Number(section.dataset.l), h = Number(section.dataset.h);
    const head = headOf(l, h), step = head.steps[Number(section.dataset.k)], i = Number(td.dataset.i), j = Number(td.dataset.j);
    tables.querySelectorAll("td.picked").forEach(function (c) { c.classList.remove("picked"); });
    td.classList.add("picked");
    const cell = step.name + "[" + i + "," + j + "]";
    panelTitle.textContent = cell + " = " + td.textContent + "  (layer " + data.layers[l].layer + ", head " + head.head + ")";
    full.textContent = td.textContent === td.title ? "" : "in full: " + td.title;
    const lines = [step.formula];
    step.operands.forEach(function (op) {
      const from = stepOf(head, op[0]);
      if (!from) return;
      const v = values(from);
      if (op[1] === "i*") {
        const row = [];
        for (let c = 0; c < from.cols; ++c) row.push(rounded(v[i * from.cols + c], from));
        lines.push("row " + i + " of " + from.name + ": (" + row.join(", ") + ")");
      } else {
        const c = op[1] === "ij" ? j : 0;
        lines.push(from.name + "[" + i + "," + c + "] = " + full64(v[i * from.cols + c]));
      }
    });
    if (step.dot && data.explain)
      lines.push("", "its products, term by term:", "  " + data.explain.replace("{layer}", data.layers[l].layer).replace("{file}", data.layers[l].file)
                                                             .replace("{cell}", cell).replace("{head}", head.head));
    panel.textContent = lines.join("\n");
  }

  grid.addEventListener("mousemove", function (e) { const c = e.target.closest("canvas"); if (c) pointed(c, e); });
  grid.addEventListener("click", function (e) { const c = e.target.closest("canvas"); if (c) openTrace(c); });
  tables.addEventListener("click", function (e) { const td = e.target.closest("td[data-i]"); if (td) explain(td); });
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Enter" && e.key !== " ") return;
    const t = e.target;
    if (t.matches && t.matches("#grid canvas")) { e.preventDefault(); openTrace(t); }
    else if (t.matches && t.matches("#trace td[data-i]")) { e.preventDefault(); explain(t); }
  });
  linesButton.addEventListener("click", function () {
    lines = !lines;
    linesButton.setAttribute("aria-pressed", String(lines));
    drawAll();
  });
  if (specialBox) specialBox.addEventListener("change", drawAll);
  window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", drawAll);
  document.querySelectorAll("[data-js]").forEach(function (e) { e.hidden = false; });
  drawAll();
})();
)js";

}  // namespace

std::string model_view_html(const ModelView& view, int precision, const std::string& explain) {
    json layers = json::array();
    std::size_t heads = 0;
    for (const auto& layer : view.layers) {
        json list = json::array();
        for (const auto& head : layer.heads) {
            json steps = json::array();
            for (const Step& step : head.steps) steps.push_back(step_json(step, head.steps, view));
            list.push_back({{"head", head.head}, {"steps", steps}});
        }
        heads = std::max(heads, layer.heads.size());
        layers.push_back({{"layer", layer.layer}, {"file", layer.file}, {"heads", list}});
    }
    const json data = {{"n", view.n}, {"m", view.m}, {"precision", precision}, {"queries", view.queries}, {"keys", view.keys}, {"explain", explain}, {"special", view.special}, {"layers", layers}};

    const std::string title = "attn-trace view" + (view.title.empty() ? "" : ": " + view.title);
    std::string body = "<style>" + std::string(style) + "</style>\n<header>\n<h1>" + html_escape(title) + "</h1>\n";
    body += fmt::format("<p class=\"problem\">{} layer{} × {} head{}, {} queries over {} keys. Each cell: a head's weights, queries down, keys across, "
                        "on one scale 0 (light) to 1 (dark). Point at a cell for its tokens; click it for the head's trace.</p>\n",
                        view.layers.size(), view.layers.size() == 1 ? "" : "s", heads, heads == 1 ? "" : "s", view.n, view.m);
    body += "<div class=\"controls\" hidden data-js><button id=\"lines\" aria-pressed=\"false\" title=\"draw each head as lines from queries (left) to keys "
            "(right), as dark as their weight\">lines</button>";
    if (std::find(view.special.begin(), view.special.end(), true) != view.special.end())
        body += fmt::format(" <label title=\"the tokenizer's special tokens ([CLS], [SEP], …): their rows and columns in the grid\"><input type=\"checkbox\" "
                            "id=\"special\"{}> special tokens</label>",
                            view.hide_special ? "" : " checked");
    body += " <output id=\"hover\" aria-live=\"polite\"></output></div>\n</header>\n";
    body += fmt::format("<section id=\"grid\" aria-label=\"layers and heads\" style=\"grid-template-columns:max-content repeat({},max-content)\">\n<span></span>", heads);
    for (std::size_t h = 0; h < heads; ++h) body += fmt::format("<span class=\"label column\">head {}</span>", h);
    body += "\n";
    for (std::size_t l = 0; l < view.layers.size(); ++l) {
        const auto& layer = view.layers[l];
        body += fmt::format("<span class=\"label\">layer {}</span>", layer.layer);
        for (std::size_t h = 0; h < heads; ++h) {
            if (h >= layer.heads.size()) {
                body += "<span></span>";
                continue;
            }
            const int head = layer.heads[h].head;
            body += fmt::format("<canvas data-layer=\"{}\" data-head=\"{}\" data-l=\"{}\" data-h=\"{}\" tabindex=\"0\" role=\"button\" aria-pressed=\"false\" "
                                "aria-label=\"layer {}, head {}: open its trace\"></canvas>",
                                layer.layer, head, l, h, layer.layer, head);
        }
        body += "\n";
    }
    body += "</section>\n<noscript><p>The grid and the traces are drawn by the page's script: allow it to see them.</p></noscript>\n";
    body += "<div id=\"trace\" hidden>\n<main id=\"trace-steps\"></main>\n<aside aria-live=\"polite\">\n<h2 id=\"model-explain-title\">Explanation</h2>\n"
            "<p class=\"muted\">Click a cell, or focus it with Tab and press Enter, to see its formula and the cells it is computed from.</p>\n"
            "<p class=\"muted\" id=\"model-explain-full\"></p>\n<pre id=\"model-explain\"></pre>\n</aside>\n</div>\n";
    body += "<script type=\"application/json\" id=\"model-data\">" + script_json(data) + "</script>\n<script>" + script + "</script>\n";
    return html_page(title, "model", body);
}

}  // namespace attn_trace
