// Markdown, LaTeX, CSV, the terminal heatmap and the SVG heatmap of the weights.
#include <catch2/catch.hpp>

#include <regex>

#include "attn_trace/errors.hpp"
#include "attn_trace/render.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;
using namespace attn_trace::testing;

namespace {

// Seed 001's three words, causal: weights (1, 0, 0), (0.5, 0.5, 0), (0.503, 0.248, 0.248).
const char* damaged_causal = R"({"tokens": ["damaged", "on", "arrival"],
  "Q": [[0.5, 1.5], [0, 0], [1, 0]], "K": [[1, 0], [0, 0.5], [0, 2]], "V": [[2, 0], [0, 0], [0, 1]], "mask": "causal"})";

const char* two_heads = R"({"Q": [[1, 0, 0, 1], [0, 1, 1, 0]], "K": [[1, 0, 0, 1], [0, 1, 1, 0]], "V": [[1, 2], [3, 4]], "heads": 2})";

RenderOptions only(std::vector<std::string> steps, std::optional<int> head = std::nullopt) {
    RenderOptions options;
    for (const auto& name : steps) options.steps.push_back(step_named(name));
    options.head = head;
    return options;
}

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

}  // namespace

TEST_CASE("markdown writes one labelled table per step with its formula and shape") {
    const std::string md = render_markdown(run_json(damaged_causal), only({"masked", "weights"}));
    CHECK(md.find("### `weights` $A = E/\\ell =\\mathrm{softmax}(Z)$ (3, 3), head 0") != std::string::npos);
    CHECK(md.find("| | damaged | on | arrival |") != std::string::npos);
    CHECK(md.find("| **on** | 0.5000 | 0.5000 | 0 |") != std::string::npos);
    CHECK(md.find("| **damaged** | 0.3536 | -inf | -inf |") != std::string::npos);
    CHECK(count(md, "|---|") == 2);
}

TEST_CASE("latex writes a labelled array per step, -inf as minus infinity, and escapes names") {
    // Token labels make each step an array with a label column (docs/COMMANDS.md#output-formats).
    const std::string tex = render_latex(run_json(damaged_causal), only({"masked", "row_max"}));
    CHECK(count(tex, "\\begin{array}{r|") == 2);
    CHECK(count(tex, "\\end{array}") == 2);
    CHECK(count(tex, "bmatrix") == 0);
    CHECK(tex.find("0.3536 & -\\infty & -\\infty \\\\") != std::string::npos);
    CHECK(tex.find("\\textbf{row\\_max}") != std::string::npos);
    CHECK(tex.find("_max") == tex.find("\\_max") + 1);  // no bare underscore in text mode
}

TEST_CASE("latex splits wide matrices into blocks that fit the page, each headed by its columns") {
    // 13 keys: --full writes 13 columns as 7 + 6 (the estimate of their width in
    // Computer Modern keeps each block inside the text width); the summary 5 + "…" + 3 as 5 + 4.
    const std::string keys = "[[1],[1],[1],[1],[1],[1],[1],[1],[1],[1],[1],[1],[1]]";
    const std::string wide = R"({"Q": [[1]], "K": )" + keys + R"(, "V": )" + keys + "}";
    RenderOptions full = only({"weights"});
    full.full = true;
    const std::string split = render_latex(run_json(wide), full);
    CHECK(split.find("columns 0--6 of 13:") != std::string::npos);
    CHECK(split.find("columns 7--12 of 13:") != std::string::npos);
    CHECK(split.find("MaxMatrixCols") == std::string::npos);  // amsmath's limit of 10 is never reached
    const std::string summary = render_latex(run_json(wide), only({"weights"}));
    CHECK(summary.find("columns 0--4 of 13:") != std::string::npos);
    CHECK(summary.find("columns 10--12 of 13:") != std::string::npos);
    CHECK(count(summary, "\\cdots") == 1);
}

TEST_CASE("csv writes exactly one step at full precision, and refuses several") {
    const Trace trace = run_json(damaged_causal);
    const std::string csv = render_csv(trace, only({"weights"}));
    CHECK(csv.rfind("weights,damaged,on,arrival\n", 0) == 0);
    CHECK(csv.find("arrival,0.5034898434845538,0.2482550782577231,0.2482550782577231\n") != std::string::npos);
    CHECK(render_csv(trace, only({"masked"})).find("damaged,0.353553390593273") != std::string::npos);
    CHECK_THROWS_AS(render_csv(trace, only({"weights", "out"})), InputError);
    CHECK_THROWS_AS(render_csv(run_json(two_heads), only({"weights"})), InputError);  // two heads
    CHECK_NOTHROW(render_csv(run_json(two_heads), only({"weights"}, 1)));
}

TEST_CASE("csv quotes labels that hold commas or quotes") {
    const std::string csv = render_csv(run_json(R"({"tokens": ["a,b", "say \"hi\""], "Q": [[1], [2]], "K": [[1], [2]], "V": [[1], [2]]})"), only({"v"}));
    CHECK(csv.find("\"a,b\",1\n\"say \"\"hi\"\"\",2\n") != std::string::npos);
}

TEST_CASE("the plain heatmap marks masked cells and shades by weight") {
    const std::string grid = render_heatmap(run_json(damaged_causal), RenderOptions{});
    CHECK(grid.find("damaged 1.0000█       ×       ×") != std::string::npos);
    CHECK(grid.find("on      0.5000▒ 0.5000▒       ×") != std::string::npos);
    CHECK(grid.find("\x1b[") == std::string::npos);
    RenderOptions coloured;
    coloured.color = true;
    CHECK(render_heatmap(run_json(damaged_causal), coloured).find("\x1b[48;5;") != std::string::npos);
}

TEST_CASE("the SVG has one panel per head, a colour scale and the masked cells marked") {
    const std::string two = render_weights_svg(run_json(two_heads), RenderOptions{});
    CHECK(count(two, "<g transform=") == 2);
    CHECK(two.find(">head 0<") != std::string::npos);
    CHECK(two.find(">head 1<") != std::string::npos);
    CHECK(two.find("id=\"scale\"") != std::string::npos);
    RenderOptions head_one;
    head_one.head = 1;
    CHECK(count(render_weights_svg(run_json(two_heads), head_one), "<g transform=") == 1);

    const std::string causal = render_weights_svg(run_json(damaged_causal), RenderOptions{});
    CHECK(count(causal, "fill=\"url(#masked)\"><title>") == 3);  // the three cells above the diagonal
    CHECK(causal.find("<title>damaged → arrival: masked</title>") != std::string::npos);
    // Every element opened is closed: a cheap well-formedness check (the CLI test parses it with Python).
    CHECK(count(causal, "<svg") == 1);
    CHECK(count(causal, "</svg>") == 1);
    CHECK(count(causal, "<g ") == count(causal, "</g>"));
}

TEST_CASE("pictures of a trace without full weights are refused") {
    Trace empty;
    CHECK_THROWS_AS(render_heatmap(empty, RenderOptions{}), InputError);
    CHECK_THROWS_AS(render_weights_svg(empty, RenderOptions{}), InputError);
}

TEST_CASE("format_rounded drops trailing zeros and never writes -0") {
    CHECK(format_rounded(0.5, 4) == "0.5");
    CHECK(format_rounded(2.0, 4) == "2");
    CHECK(format_rounded(0.124206, 4) == "0.1242");
    CHECK(format_rounded(-0.00001, 4) == "0");
    CHECK(format_rounded(-1.5, 2) == "-1.5");
}

TEST_CASE("latex_text escapes LaTeX specials and writes the trace's Unicode as LaTeX") {
    CHECK(latex_text("row_max") == "row\\_max");
    CHECK(latex_text("Q Kᵀ") == "Q K$^\\top$");
    CHECK(latex_text("50% & #1") == "50\\% \\& \\#1");
    CHECK(latex_text("exp(masked − row_max)") == "exp(masked $-$ row\\_max)");
}

TEST_CASE("latex_formula sets a step's formula in math mode, its remark as text") {
    CHECK(latex_formula("m_new = max(m_old, max_j S_ij)") == "$m_{\\mathrm{new}}=\\mathrm{max}(m_{\\mathrm{old}},\\mathrm{max}_{j}\\,S_{ij})$");
    CHECK(latex_formula("exp(masked − row_max)") == "$\\mathrm{exp}(\\mathrm{masked}-\\mathrm{row\\_max})$");
    CHECK(latex_formula("s · Q[0…1] K[2…3]ᵀ + M (query block 0, key tile 1)") ==
          "$s\\cdot Q[0\\dots 1]\\,K[2\\dots 3]^{\\top}+M$ (query block 0, key tile 1)");
    CHECK(latex_formula("u / ℓ after the last tile") == "$u/\\ell $ after the last tile");
}

TEST_CASE("latex_prose puts the formulas of a sentence in math mode") {
    CHECK(latex_prose("ℓ_new = rescale · ℓ_old + Σ_j e^(S_j - m_new), over this tile's keys") ==
          "$\\ell _{\\mathrm{new}}=\\mathrm{rescale}\\cdot \\ell _{\\mathrm{old}}+\\Sigma_{j}\\,e^{S_{j}-m_{\\mathrm{new}}}$, over this tile's keys");
    CHECK(latex_prose("empty_rows = zero keeps the row") .find("empty\\_rows") != std::string::npos);
    CHECK(latex_prose("a plain sentence, no formula") == "a plain sentence, no formula");
}
