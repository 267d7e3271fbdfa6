// The frame of every HTML page: its style sheet and its script, written here as
// they are sent (no framework, no build step), so the page works from a file with
// nothing fetched. The script reads what the sections carry as data attributes
// (data-step, data-head, data-stage, data-cols) and the explanations' JSON.
#include "attn_trace/render_html.hpp"

namespace attn_trace {

namespace {

// Light and dark come from the reader's system setting; heat is a cell's --h
// (0…1) mixed between --lo and --hi; a signed step's cells (neg, pos) mix --neg
// or --pos into --zero by --h, its distance from 0 (docs/COMMANDS.md#output-formats);
// masked cells are hatched over it. Text true of one scheme only (the colour of 0) is
// written twice, in-light and in-dark, and the other scheme's hidden; print is light.
constexpr const char* style = R"css(
:root{--bg:#fff;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--lo:#f7fbff;--hi:#08519c;--on-hi:#fff;--hatch:#8c959f;--pick:#d1242f;--panel:#f6f8fa;--neg:#2166ac;--zero:#fff;--pos:#b2182b}
.in-dark{display:none}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;--line:#3d444d;--lo:#151b23;--hi:#79c0ff;--on-hi:#0d1117;--hatch:#656c76;--pick:#ff7b72;--panel:#151b23;--neg:#79c0ff;--zero:#151b23;--pos:#ff8182}.in-light{display:none}.in-dark{display:inline}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,sans-serif;display:grid;grid-template-columns:minmax(11em,15em) minmax(0,1fr) minmax(16em,min(26em,24vw));grid-template-areas:"head head head" "nav main aside";gap:0 1.2em}
body.sheet{display:block;max-width:60em;margin:0 auto;padding:0 1em 2em}
header{grid-area:head;padding:.8em 1.2em;border-bottom:1px solid var(--line)}
h1{font-size:1.3em;margin:.2em 0}h2{font-size:1.05em;margin:.3em 0}
.problem,.muted{color:var(--muted)}
.notes{margin:.4em 0;padding-left:1.2em}
nav{grid-area:nav;position:sticky;top:0;align-self:start;max-height:100vh;overflow-y:auto;overflow-x:hidden;padding:.8em 0 .8em 1.2em}
nav ol{list-style:none;padding:0;margin:.6em 0}
nav a{display:block;padding:.1em .4em;border-radius:4px;color:inherit;text-decoration:none;font-family:ui-monospace,monospace;font-size:.9em;overflow-wrap:anywhere}
nav small{color:var(--muted)}nav a[aria-current] small{color:inherit}
nav a[aria-current]{background:var(--hi);color:var(--on-hi)}
nav .off,.step.off{display:none}
button{font:inherit;padding:.15em .6em;border:1px solid var(--line);border-radius:4px;background:var(--panel);color:inherit;cursor:pointer}
button[aria-pressed=true]{background:var(--hi);color:var(--on-hi)}
.tabs{display:flex;flex-wrap:wrap;gap:.3em;margin:.5em 0}
.stage{display:block;margin:.5em 0}.stage input{width:100%}
main{grid-area:main;display:grid;grid-template-columns:repeat(auto-fill,minmax(20em,1fr));align-content:start;gap:.6em 1.2em;padding:.8em 0;min-width:0}
.step.wide,.numbers{grid-column:1/-1}
body.sheet main{display:block}
.step{max-width:100%;overflow-x:auto;padding:.3em .5em;border-left:3px solid transparent}
.step.current{border-left-color:var(--hi)}
.formula{font-family:ui-monospace,monospace;font-weight:normal}.shape,.place{color:var(--muted);font-weight:normal}
table{border-collapse:collapse;font-family:ui-monospace,monospace;font-size:.88em;margin:.3em 0}
th{font-weight:normal;color:var(--muted);padding:.1em .5em;text-align:right;white-space:nowrap}
td{padding:.1em .5em;text-align:right;border:1px solid var(--line);white-space:nowrap;background:color-mix(in oklab,var(--hi) calc(var(--h,0)*100%),var(--lo))}
td.neg{background:color-mix(in oklab,var(--neg) calc(var(--h,0)*100%),var(--zero))}
td.pos{background:color-mix(in oklab,var(--pos) calc(var(--h,0)*100%),var(--zero))}
td.hi{color:var(--on-hi)}
td.b,.swatch.b{background:var(--lo) repeating-linear-gradient(135deg,color-mix(in srgb,var(--hatch) 45%,transparent) 0 1px,transparent 1px 6px);color:var(--fg)}
td.z{font-weight:bold}
td.gap{background:none;color:var(--muted)}
.legend{margin:.1em 0;color:var(--muted);font-size:.85em}.swatch{display:inline-block;width:1.2em;height:.9em;border:1px solid var(--line);vertical-align:middle}
td[tabindex]{cursor:pointer}
td.picked,td:focus-visible{outline:2px solid var(--pick);outline-offset:-2px}
aside{grid-area:aside;position:sticky;top:0;align-self:start;max-height:100vh;overflow:auto;padding:.8em 1.2em .8em 0}
aside pre:empty{display:none}
aside pre,.sheet pre{white-space:pre-wrap;background:var(--panel);padding:.6em;border-radius:6px;font-size:.85em}
dl{display:grid;grid-template-columns:max-content auto;gap:0 1em}dt{font-family:ui-monospace,monospace}dd{margin:0}
details{margin:1em 0;padding:.4em .8em;border:1px solid var(--line);border-radius:6px}
summary{cursor:pointer;font-weight:bold}
@media (max-width:60em){body{display:block}nav,aside{position:static;max-height:none;padding:.8em 1.2em}}
@media print{:root{--bg:#fff;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--lo:#f7fbff;--hi:#08519c;--on-hi:#fff;--hatch:#8c959f;--panel:#f6f8fa;--neg:#2166ac;--zero:#fff;--pos:#b2182b}.in-light{display:inline}.in-dark{display:none}body{display:block;font-size:11pt}nav,aside,button{display:none}.step.off{display:block}.step{break-inside:avoid;overflow:visible}td{print-color-adjust:exact;-webkit-print-color-adjust:exact}}
)css";

// The navigator: previous/next (buttons, or ← and → anywhere but in a text field),
// a step's link, the head tabs, and the slider over decode's tokens or tiled's
// tiles (steps without a stage stay shown). A cell's click, or Enter on a focused
// cell, puts its explanation in the panel.
constexpr const char* script = R"js(
"use strict";
(function () {
  const steps = Array.from(document.querySelectorAll("section.step"));
  const links = Array.from(document.querySelectorAll("#steps ol a"));
  const source = document.getElementById("explanations");
  const explanations = source ? JSON.parse(source.textContent) : {};
  const panel = document.getElementById("explain-text");
  const panelTitle = document.getElementById("explain-title");
  const full = document.getElementById("explain-full");
  const stage = document.getElementById("stage");
  const stageLabel = document.getElementById("stage-label");
  const stageLabels = stage ? JSON.parse(stage.dataset.labels) : [];
  const nav = document.getElementById("steps");
  const group = nav ? Number(nav.dataset.group || 1) : 1;  // query heads per KV head
  let head = "all";
  let current = -1;

  function shown(k) { return !steps[k].classList.contains("off"); }
  function link(k) { return links.find(function (a) { return a.dataset.step === steps[k].dataset.step; }); }

  function select(k, scroll) {
    if (k < 0 || k >= steps.length) return;
    if (current >= 0) {
      steps[current].classList.remove("current");
      const old = link(current);
      if (old) old.removeAttribute("aria-current");
    }
    current = k;
    steps[k].classList.add("current");
    const now = link(k);
    if (now) now.setAttribute("aria-current", "step");
    if (scroll) steps[k].scrollIntoView({block: "nearest"});
  }

  function filter() {
    steps.forEach(function (s, k) {
      // A step of a KV head (decode's caches, grad_k) belongs to every query head that reads it.
      const kv = s.dataset.kvHead;
      const headOk = head === "all" || (s.dataset.head === undefined && kv === undefined) || s.dataset.head === head ||
                     (kv !== undefined && Math.floor(Number(head) / group) === Number(kv));
      const stageOk = !stage || s.dataset.stage === undefined || s.dataset.stage === stage.value;
      s.classList.toggle("off", !(headOk && stageOk));
      const a = link(k);
      if (a) a.parentElement.classList.toggle("off", !(headOk && stageOk));
    });
    if (stage) stageLabel.textContent = stageLabels[Number(stage.value)];
    if (current < 0 || !shown(current)) {
      const staged = steps.findIndex(function (s, k) { return shown(k) && s.dataset.stage !== undefined; });
      const first = steps.findIndex(function (s, k) { return shown(k); });
      select(staged >= 0 ? staged : first, false);
    }
  }

  function clearCurrent() {
    steps.forEach(function (s) { s.classList.remove("current"); });
    links.forEach(function (a) { a.removeAttribute("aria-current"); });
    current = -1;
  }

  // Within a tile (or token) → and ← go through its steps; past its last one, on
  // to the next tile's first; past the last tile, on to the steps without one.
  function move(delta) {
    const inStage = stage && current >= 0 && steps[current].dataset.stage !== undefined;
    for (let k = current + delta; k >= 0 && k < steps.length; k += delta) {
      if (shown(k) && (!inStage || steps[k].dataset.stage !== undefined)) { select(k, true); return; }
    }
    if (!inStage) return;
    const next = Number(stage.value) + delta;
    if (next >= Number(stage.min) && next <= Number(stage.max)) {
      const from = current;
      stage.value = String(next);
      clearCurrent();
      filter();
      const order = steps.map(function (s, k) { return k; }).filter(function (k) { return shown(k) && steps[k].dataset.stage !== undefined; });
      if (order.length) select(delta > 0 ? order[0] : order[order.length - 1], true);
      else current = from;
      return;
    }
    for (let k = current + delta; k >= 0 && k < steps.length; k += delta) {
      if (shown(k)) { select(k, true); return; }
    }
  }

  function explain(cell) {
    const section = cell.closest("section.step");
    const k = section.dataset.step;
    const cols = Number(section.dataset.cols);
    const i = Number(cell.dataset.i);
    const j = Number(cell.dataset.j);
    const list = explanations[k];
    document.querySelectorAll("td.picked").forEach(function (c) { c.classList.remove("picked"); });
    cell.classList.add("picked");
    panelTitle.textContent = section.dataset.name + "[" + i + "," + j + "] = " + cell.textContent;
    full.textContent = cell.textContent === cell.title ? "" : "in full: " + cell.title;
    panel.textContent = (list && list[i * cols + j]) || panel.dataset.none;
    select(steps.indexOf(section), false);
  }

  document.addEventListener("click", function (e) {
    const cell = e.target.closest("td[data-i]");
    if (cell && panel) { explain(cell); return; }
    const a = e.target.closest("#steps ol a");
    if (a) {
      e.preventDefault();
      select(steps.findIndex(function (s) { return s.dataset.step === a.dataset.step; }), true);
    }
    const tab = e.target.closest(".tabs button");
    if (tab) {
      head = tab.dataset.head;
      document.querySelectorAll(".tabs button").forEach(function (b) { b.setAttribute("aria-pressed", String(b === tab)); });
      filter();
    }
  });
  document.addEventListener("keydown", function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const t = e.target;
    if ((e.key === "Enter" || e.key === " ") && t.matches && t.matches("td[data-i]") && panel) { e.preventDefault(); explain(t); return; }
    if (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT") return;
    if (e.key === "ArrowRight") { e.preventDefault(); move(1); }
    if (e.key === "ArrowLeft") { e.preventDefault(); move(-1); }
  });
  const prev = document.getElementById("prev");
  const next = document.getElementById("next");
  if (prev) prev.addEventListener("click", function () { move(-1); });
  if (next) next.addEventListener("click", function () { move(1); });
  if (stage) stage.addEventListener("input", function () { clearCurrent(); filter(); });
  // The controls work only with the script: they come hidden, and it shows them.
  document.querySelectorAll("[data-js]").forEach(function (e) { e.hidden = false; });
  if (steps.length && document.getElementById("steps")) filter();
})();
)js";

}  // namespace

std::string html_escape(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

std::string html_page(const std::string& title, const std::string& body_class, const std::string& content) {
    return "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
           "<meta name=\"generator\" content=\"attn-trace\">\n<title>" +
           html_escape(title) + "</title>\n<style>" + style + "</style>\n</head>\n<body" +
           (body_class.empty() ? "" : " class=\"" + body_class + "\"") + ">\n" + content + "<script>" + script + "</script>\n</body>\n</html>\n";
}

}  // namespace attn_trace
