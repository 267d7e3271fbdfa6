// The HTML page's markup, checked as text: what the browser test (tests/browser/
// pages.py) checks in chromium is that the page works; these check what it holds.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn_trace/exercise.hpp"
#include "attn_trace/explain.hpp"
#include "attn_trace/render_html.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;
using namespace attn_trace::testing;

namespace {

const std::string damaged_causal = damaged_keys + R"(, "mask": "causal"})";

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

// The explanations' JSON the page carries, read back.
nlohmann::json embedded_explanations(const std::string& page) {
    const std::string open = "<script type=\"application/json\" id=\"explanations\">";
    const auto start = page.find(open) + open.size();
    return nlohmann::json::parse(page.substr(start, page.find("</script>", start) - start));
}

CellExplanations explanations_of(const Trace& trace, const Problem& problem, const RenderOptions& options) {
    return explain_cells(trace, problem, RunOptions{}, selected_steps(trace, options), ExplainSource{}, options.precision);
}

}  // namespace

TEST_CASE("the page writes every selected step as a section with every number in full") {
    const Problem problem = parse_problem(damaged_causal, "damaged.json");
    const Trace trace = pipeline_full(problem, RunOptions{});
    const std::string page = render_html(trace, RenderOptions{});
    CHECK(page.rfind("<!doctype html>", 0) == 0);
    CHECK(count(page, "<section class=\"step") == trace.steps.size());
    // weights[2,1] in full, the title reading back to the same double.
    const double w21 = step_values(trace, "weights")(2, 1);
    CHECK(page.find(fmt::format("title=\"{}\"", w21)) != std::string::npos);
    CHECK(std::stod(fmt::format("{}", w21)) == w21);
    // The causal mask: −∞ shown as such, the blocked weights hatched exact zeros.
    const auto weights = page.substr(page.find("data-name=\"weights\""));
    CHECK(weights.substr(0, weights.find("</section>")).find(R"(<td data-i="0" data-j="2" title="0" class="b z">0</td>)") != std::string::npos);
    CHECK(page.find("title=\"−∞\" class=\"b\">−∞</td>") != std::string::npos);
    CHECK(page.find("-inf") == std::string::npos);
    // Nothing from outside the file.
    CHECK(page.find("http") == std::string::npos);
    CHECK(page.find(" src=") == std::string::npos);
    // What needs the script comes hidden (without it, the tables and the step list still work).
    CHECK(page.find("<aside aria-live=\"polite\" hidden data-js>") != std::string::npos);
    CHECK(page.find("<div hidden data-js><button id=\"prev\"") != std::string::npos);
    CHECK(page.find("<script>") < page.find("</body>"));
}

TEST_CASE("the page hatches only the zeros a mask makes, and files decode's caches under their KV head") {
    // d_v = m = 3 and a causal mask: out's zeros sit where masked is −∞, and are not the mask's.
    const Trace trace = run_json(R"({"Q": [[1, 0], [0, 1], [1, 1]], "K": [[1, 0], [0, 1], [1, 1]], "V": [[0, 0, 1], [0, 1, 0], [1, 0, 0]], "mask": "causal"})");
    const std::string page = render_html(trace, RenderOptions{});
    const auto out = page.substr(page.find("data-name=\"out\""));
    CHECK(out.substr(0, out.find("</section>")).find("class=\"b") == std::string::npos);
    const auto weights = page.substr(page.find("data-name=\"weights\""));
    CHECK(count(weights.substr(0, weights.find("</section>")), "class=\"b z\"") == 3);
    const Problem gqa = parse_problem(R"({"Q": [[1, 0, 0, 1]], "K": [[1, 0], [0, 1]], "V": [[1, 2], [3, 4]], "heads": 2, "kv_heads": 1})", "gqa.json");
    const std::string decode = render_html(pipeline_decode(gqa, RunOptions{}, DecodeOptions{}), RenderOptions{});
    const auto cache = decode.substr(decode.find("data-name=\"k_cache\""));
    CHECK(cache.substr(0, cache.find('>')).find("data-kv-head=\"0\"") != std::string::npos);
    CHECK(cache.substr(0, cache.find('>')).find(" data-head=") == std::string::npos);
    // Its heading and its entry in the step list say KV head, not head (a query head's number).
    CHECK(cache.substr(0, cache.find("</h2>")).find("<span class=\"place\">KV head 0, t = 0</span>") != std::string::npos);
    CHECK(decode.find("k_cache<small> KV head 0 t=0</small>") != std::string::npos);
    CHECK(decode.find("data-group=\"2\"") != std::string::npos);
}

TEST_CASE("a signed step diverges around 0, a non-negative one keeps the sequential scale") {
    // scores = [[2, -1, 0], [0, -4, 1]]: ±4 is the scale's end (docs/COMMANDS.md#output-formats).
    const Trace trace = run_json(R"({"Q": [[1, 0], [0, 1]], "K": [[2, 0], [-1, -4], [0, 1]], "V": [[1], [2], [3]], "scale": "none"})");
    RenderOptions options;
    options.steps = {StepName::scores, StepName::weights};
    const std::string page = render_html(trace, options);
    const auto scores = page.substr(page.find("data-name=\"scores\""));
    const std::string table = scores.substr(0, scores.find("</section>"));
    CHECK(table.find(R"(<td data-i="0" data-j="0" title="2" class="pos" style="--h:0.50">2</td>)") != std::string::npos);
    CHECK(table.find(R"(<td data-i="0" data-j="1" title="-1" class="neg" style="--h:0.25">-1</td>)") != std::string::npos);
    CHECK(table.find(R"(<td data-i="1" data-j="1" title="-4" class="neg hi" style="--h:1.00">-4</td>)") != std::string::npos);
    CHECK(table.find(R"(<td data-i="0" data-j="2" title="0" class="z pos" style="--h:0.00">0</td>)") != std::string::npos);
    // The colour of 0 is the scheme's: white, or near-black in the dark one (the CSS shows one span).
    CHECK(table.find("<p class=\"legend\">signed: blue below 0, <span class=\"in-light\">white</span><span class=\"in-dark\">near-black</span> at 0, "
                     "red above 0, the scale ±4.0000 (max |x|)</p>") != std::string::npos);
    CHECK(page.find("@media (prefers-color-scheme:dark){") < page.find(".in-light{display:none}.in-dark{display:inline}}"));
    const auto weights = page.substr(page.find("data-name=\"weights\""));
    const std::string sequential = weights.substr(0, weights.find("</section>"));
    CHECK(sequential.find("class=\"pos") == std::string::npos);
    CHECK(sequential.find("class=\"neg") == std::string::npos);
    CHECK(sequential.find("<p class=\"legend\">weights: one scale for every head and step, 0 (light) to 1 (dark)</p>") != std::string::npos);
}

TEST_CASE("weights take the fixed scale 0…1: a decode step's weight 1 is the darkest, its 0.5035 half way") {
    // damaged on arrival, causal, decoded: at t = 0 the one weight is 1; at t = 2 the row is
    // 0.5035, 0.2483, 0.2483. Over each step's own range the 1 was the lightest (docs/COMMANDS.md#output-formats).
    const Problem problem = parse_problem(damaged_causal, "test.json");
    RenderOptions options;
    options.steps = {StepName::weights};
    const std::string page = render_html(pipeline_decode(problem, {}, {}), options);
    CHECK(page.find(R"(<td data-i="0" data-j="0" title="1" class="hi" style="--h:1.00")") != std::string::npos);
    CHECK(page.find(R"(style="--h:0.50">0.5035</td>)") != std::string::npos);
    CHECK(page.find(R"(style="--h:0.25">0.2483</td>)") != std::string::npos);
}

// The class of the section of the step named `name` (its first one).
std::string section_class(const std::string& page, const std::string& name) {
    const auto end = page.find("data-name=\"" + name + "\"");
    const auto start = page.rfind("<section class=\"", end) + std::string("<section class=\"").size();
    return page.substr(start, page.find('"', start) - start);
}

TEST_CASE("a step takes the page's whole width when its table is too wide for a card beside another") {
    // damaged on arrival: (3, 3) with its tokens as labels fits a card beside another.
    const std::string damaged = render_html(run_json(damaged_keys + "}"), RenderOptions{});
    CHECK(section_class(damaged, "scores") == "step");
    // (8, 8) of 4 decimals: about 70 characters, twice what the narrowest card holds.
    std::string rows;
    for (int i = 0; i < 8; ++i) rows += fmt::format("{}[{}]", i ? ", " : "", fmt::join(std::vector<double>{0.5 * i, 1, 0, 0, 0, 0, 0, -1}, ", "));
    const std::string eight = render_html(run_json(fmt::format(R"({{"Q": [{0}], "K": [{0}], "V": [{0}]}})", rows)), RenderOptions{});
    CHECK(section_class(eight, "weights") == "step wide");
    CHECK(section_class(eight, "row_max") == "step");
    // Three columns, but labelled with long tokens: the labels widen it, not the count.
    const std::string labelled = render_html(run_json(R"({"tokens": ["Wmkeys000001", "Wmkeys000002", "Wmkeys000003"],
        "Q": [[1, 0], [0, 1], [1, 1]], "K": [[1, 0], [0, 1], [1, 1]], "V": [[1, 0], [0, 1], [1, 1]]})"), RenderOptions{});
    CHECK(section_class(labelled, "weights") == "step wide");
}

TEST_CASE("grad's page hatches the gradients' zeros that the mask makes, given the forward trace") {
    const Problem problem = parse_problem(damaged_causal, "damaged.json");
    const Trace grad = pipeline_grad(problem, RunOptions{}, GradOptions{});
    const Trace forward = pipeline_full(problem, RunOptions{});
    const std::string page = render_html(grad, RenderOptions{}, {}, &forward);
    for (const std::string name : {"grad_masked", "grad_scaled", "grad_scores"}) {
        const auto at = page.substr(page.find("data-name=\"" + name + "\""));
        const std::string section = at.substr(0, at.find("</section>"));
        INFO(name);
        // Above the diagonal, and nowhere else: grad_masked[0,0] = 1 · (g − g) is an exact 0 the mask did not make.
        CHECK(count(section, "class=\"b z\"") == 3);
        CHECK(section.find(R"(<td data-i="0" data-j="1" title="0" class="b z">0</td>)") != std::string::npos);
        CHECK(section.find(R"(<td data-i="0" data-j="0" title="0" class="z)") != std::string::npos);
        CHECK(section.find("hatched: the mask blocked the weight, so this gradient is exactly 0 by construction") != std::string::npos);
    }
    // Without the forward trace nothing tells the mask's zeros from the others: none is hatched.
    const std::string alone = render_html(grad, RenderOptions{});
    const auto at = alone.substr(alone.find("data-name=\"grad_masked\""));
    CHECK(at.substr(0, at.find("</section>")).find("class=\"b") == std::string::npos);
}

TEST_CASE("the page escapes labels and keeps an explanation from ending its script") {
    const Trace trace = run_json(R"({"tokens": ["<pad>", "a&b"], "Q": [[1], [0]], "K": [[1], [0]], "V": [[1], [2]]})");
    CellExplanations explanations;
    explanations.steps.resize(trace.steps.size());
    // "<!--<script>" would make the parser read past the element's own </script>.
    explanations.steps[0] = {"</script><b>", "<!--<script>"};
    const std::string page = render_html(trace, RenderOptions{}, explanations);
    const std::string open = "id=\"explanations\">";
    const std::string json_text = page.substr(page.find(open) + open.size(), page.find("</script>", page.find(open)) - page.find(open) - open.size());
    CHECK(json_text.find('<') == std::string::npos);
    CHECK(embedded_explanations(page)["0"][1] == "<!--<script>");
    CHECK(page.find("&lt;pad&gt;") != std::string::npos);
    CHECK(page.find("a&amp;b") != std::string::npos);
    CHECK(page.find("<pad>") == std::string::npos);
    CHECK(page.find("</script><b>") == std::string::npos);
    CHECK(embedded_explanations(page)["0"][0] == "</script><b>");  // read back whole
}

TEST_CASE("every cell's explanation on the page is explain's text for that cell, with −∞ for -inf") {
    const Problem problem = parse_problem(damaged_causal, "damaged.json");
    const Trace trace = pipeline_full(problem, RunOptions{});
    const RenderOptions options;
    const CellExplanations explanations = explanations_of(trace, problem, options);
    const auto json = embedded_explanations(render_html(trace, options, explanations));
    std::size_t explained = 0;
    for (std::size_t k = 0; k < trace.steps.size(); ++k) {
        const Step& step = trace.steps[k];
        REQUIRE(json.contains(std::to_string(k)));  // every run step of this problem is explained
        const auto& cells = json[std::to_string(k)];
        REQUIRE(cells.size() == step.values.rows() * step.values.cols());
        for (std::size_t i = 0; i < step.values.rows(); ++i)
            for (std::size_t j = 0; j < step.values.cols(); ++j) {
                const ExplainTarget target = parse_cell_spec(fmt::format("{}[{},{}]", step.name, i, j));
                std::string text = explain_problem(problem, RunOptions{}, target, ExplainOptions{});
                for (std::size_t at = text.find("-inf"); at != std::string::npos; at = text.find("-inf", at)) text.replace(at, 4, "−∞");
                CHECK(cells[i * step.values.cols() + j] == text);
                ++explained;
            }
    }
    CHECK(explained > 50);
}

TEST_CASE("decode's and tiled's cells are explained at their t and tile, grad's from the grad trace") {
    const Problem problem = parse_problem(damaged_causal, "damaged.json");
    const Trace decode = pipeline_decode(problem, RunOptions{}, DecodeOptions{});
    const Step* weights_t2 = decode.find(StepName::weights, 0, std::nullopt, 2, std::nullopt);
    REQUIRE(weights_t2);
    const auto decode_cells = explain_cells(decode, problem, RunOptions{}, {weights_t2}, ExplainSource{}, 4);
    ExplainSource at_t2;
    at_t2.t = 2;
    CHECK(decode_cells.steps[static_cast<std::size_t>(weights_t2 - decode.steps.data())][1] ==
          explain_problem(problem, RunOptions{}, parse_cell_spec("weights[0,1]"), ExplainOptions{}, at_t2));

    const TiledOptions blocks{1, 2};
    const Trace tiled = pipeline_tiled(problem, RunOptions{}, blocks);
    const Step* m_tile = tiled.find(StepName::m, 0, std::nullopt, std::nullopt, std::array{2, 1});
    REQUIRE(m_tile);
    ExplainSource source;
    source.tiled = blocks;
    const auto tiled_cells = explain_cells(tiled, problem, RunOptions{}, {m_tile}, source, 4);
    ExplainSource at_tile = source;
    at_tile.tile = std::array<std::size_t, 2>{2, 1};
    CHECK(tiled_cells.steps[static_cast<std::size_t>(m_tile - tiled.steps.data())][0] ==
          explain_problem(problem, RunOptions{}, parse_cell_spec("m[0,0]"), ExplainOptions{}, at_tile));

    const Trace grad = pipeline_grad(problem, RunOptions{}, GradOptions{});
    const Step* grad_q = grad.find(StepName::grad_q, 0, std::nullopt, std::nullopt, std::nullopt);
    REQUIRE(grad_q);
    const auto grad_cells = explain_cells(grad, problem, RunOptions{}, {grad_q}, ExplainSource{}, 4);
    CHECK(grad_cells.steps[static_cast<std::size_t>(grad_q - grad.steps.data())][2] ==
          explain_problem(problem, RunOptions{}, parse_cell_spec("grad_q[1,0]"), ExplainOptions{}));
}

TEST_CASE("a page past the explained size carries no explanations and says how to ask for one") {
    // 65 × 65 weights alone pass page_explained_cells (4096).
    const Problem problem = parse_problem(R"({"Q": {"random": {"shape": [65, 2], "seed": 1}}, "K": {"random": {"shape": [65, 2], "seed": 2}},
                                             "V": {"random": {"shape": [65, 2], "seed": 3}}})",
                                          "big.json");
    const Trace trace = pipeline_full(problem, RunOptions{});
    RenderOptions options;
    options.steps = {StepName::weights};
    const CellExplanations explanations = explanations_of(trace, problem, options);
    CHECK(explanations.steps.empty());
    CHECK(explanations.note.find("4096") != std::string::npos);
    const std::string page = render_html(trace, options, explanations);
    CHECK(embedded_explanations(page).empty());
    CHECK(page.find("tabindex=\"0\"") == std::string::npos);  // nothing to click
    CHECK(page.find("<td class=\"gap\">…</td>") != std::string::npos);  // summarised as in text
    options.full = true;
    CHECK(count(render_html(trace, options), "<td data-i=") == 65 * 65);
}

TEST_CASE("a tiled page has a slider over its tiles, a multi-head page its head tabs") {
    const Problem problem = parse_problem(damaged_causal, "damaged.json");
    const std::string tiled = render_html(pipeline_tiled(problem, RunOptions{}, TiledOptions{2, 2}), RenderOptions{});
    CHECK(tiled.find("<input type=\"range\" id=\"stage\" min=\"0\" max=\"2\"") != std::string::npos);  // tiles [0,0], [0,1], [1,0]
    CHECK(tiled.find("tile [1, 0]: query block 1, key tile 0") != std::string::npos);
    CHECK(tiled.find("data-stage=\"2\"") != std::string::npos);
    const std::string heads = render_html(run_json(R"({"Q": [[1, 0, 0, 1]], "K": [[1, 0, 0, 1]], "V": [[1, 2]], "heads": 2})"), RenderOptions{});
    CHECK(heads.find("<button data-head=\"1\" aria-pressed=\"false\">head 1</button>") != std::string::npos);
    CHECK(heads.find("id=\"stage\"") == std::string::npos);
}

TEST_CASE("an exercise page hides each part of its answer, an explanation is a page of its own") {
    const std::string exercise = write_exercise("causal", 1, Format::html);
    CHECK(exercise.rfind("<!doctype html>", 0) == 0);
    CHECK(count(exercise, "<details class=\"answer\">") == 4);  // causal has 4 tasks
    CHECK(exercise.find("<h2>Answer</h2>") < exercise.find("<summary>Show the answer to task 1</summary>"));
    CHECK(exercise.find("<summary>Show the answer to task 4</summary>") < exercise.find("<h3>Task 4: the outputs O = A V</h3>"));
    CHECK(exercise.find("Compute:") < exercise.find("<details"));
    const Problem problem = parse_problem(damaged_causal, "damaged.json");
    ExplainOptions html;
    html.format = Format::html;
    const std::string page = explain_problem(problem, RunOptions{}, parse_cell_spec("weights[2,1]"), html);
    CHECK(page.rfind("<!doctype html>", 0) == 0);
    CHECK(page.find("<pre class=\"math\">") != std::string::npos);
    CHECK(page.find("0.2483") != std::string::npos);
    CHECK(page.find("\\frac") == std::string::npos);  // the Unicode notation, not LaTeX
}
