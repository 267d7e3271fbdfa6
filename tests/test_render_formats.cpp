// Markdown, LaTeX, CSV, the terminal heatmap and the SVG heatmap of the weights.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <regex>

#include "attn_trace/errors.hpp"
#include "attn_trace/pipeline.hpp"
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

TEST_CASE("an entry's two indices are one subscript, after a step's name or a letter") {
    // User test: explain --cell grad_W_Q[1,0] --format latex wrote X_{r},1 and
    // \mathrm{grad}_{q}_{r},0, which pdflatex stops at (a double subscript).
    CHECK(latex_prose("Σ over the rows of X_r,1 · grad_q_r,0") == "$\\Sigma$ over the rows of $X_{r,1}\\cdot \\mathrm{grad\\_q}_{r,0}$");
    CHECK(latex_formula("Q_h W_UK,hᵀ") == "$Q_{h}\\,W_{UK,h}^{\\top}$");
    CHECK(latex_formula("max(m_old, m_new)") == "$\\mathrm{max}(m_{\\mathrm{old}},m_{\\mathrm{new}})$");
    // explain --cell grad_W_K[0,0] of a cross-attention problem wrote X_{\mathrm{source}}_{r,0}.
    CHECK(latex_formula("X_source_r,0") == "${X_{\\mathrm{source}}}_{r,0}$");
}

TEST_CASE("a run of superscripts or subscripts is one exponent or index, in text and in maths") {
    // User test: "3.4·10³⁸)." printed as $3.4\cdot 10??).$ in the precision exercise's LaTeX.
    CHECK(latex_prose("their range reaches about 3.4·10³⁸).") == "their range reaches about $3.4\\cdot 10^{38}$).");
    CHECK(latex_formula("RoPE⁻¹(dK_rot)") == "$\\mathrm{RoPE}^{-1}(\\mathrm{dK\\_rot})$");
    CHECK(latex_text("10³⁸, x₁₂ and 2⁻⁴") == "10$^{38}$, x$_{12}$ and 2$^{-4}$");
    CHECK(latex_text("α ℓ_old, ∂L/∂Y, δ") == "$\\alpha$ $\\ell$\\_old, $\\partial$L/$\\partial$Y, $\\delta$");
}

namespace {

// The formulas the pipelines record: every step of run, decode, tiled and grad (tiled,
// fused, with a Jacobian row) on problems that reach MLA, RoPE, dropout, a softcap and GQA.
std::vector<std::string> recorded_formulas() {
    std::vector<std::string> formulas;
    for (const auto& info : step_table()) formulas.emplace_back(info.formula);
    const auto add = [&](const Trace& trace) {
        for (const auto& step : trace.steps) formulas.push_back(step.formula);
    };
    for (const char* file : {"examples/mla_small.json", "examples/dropout_train.json", "examples/gqa_8q_2kv.json", "tests/golden/grad_rope.json",
                             "tests/golden/grad_causal_softcap.json", "tests/golden/mla_compressed_rope.json", "tests/golden/grad_dropout.json"}) {
        INFO(file);
        const Problem problem = load_problem(std::string(ATTN_TRACE_SOURCE_DIR "/") + file);
        add(pipeline_full(problem, RunOptions{}));
        if (!problem.dropout) {  // decode and tiled refuse train-mode dropout
            add(pipeline_decode(problem, RunOptions{}, DecodeOptions{}));
            add(pipeline_tiled(problem, RunOptions{}, TiledOptions{}));
        }
        if (problem.mla) continue;  // neither the fast path nor grad takes MLA
        if (!problem.dropout) add(pipeline_fast(problem, RunOptions{}, FastPathOptions{}));
        GradOptions grad;
        grad.row = 0;
        add(pipeline_grad(problem, RunOptions{}, grad));
        if (problem.dropout) continue;  // the tiled backward refuses train-mode dropout
        grad.row.reset();
        grad.tiled = TiledOptions{};
        add(pipeline_grad(problem, RunOptions{}, grad));
    }
    std::sort(formulas.begin(), formulas.end());
    formulas.erase(std::unique(formulas.begin(), formulas.end()), formulas.end());
    return formulas;
}

}  // namespace

TEST_CASE("every step formula is LaTeX without a '?', its words as text and its mathematics as maths") {
    // User test: tiled's l and u headings read "\ell = ?\ell_{old} + …" (α had no LaTeX), and
    // the mask's "$M = 0\,\mathrm{where}\,a$ query may read a key, −∞ where it may not".
    const std::vector<std::string> formulas = recorded_formulas();
    REQUIRE(formulas.size() > 80);
    // The names a formula calls upright in maths: functions and named quantities, no English.
    static const std::regex upright(R"(\\mathrm\{([^}]*)\})");
    const std::vector<std::string> names = {"exp", "max", "rowmax", "rowsum", "softmax", "tanh", "diag", "ln", "lse", "RoPE", "RMSNorm", "mean",
                                            "given", "old", "new", "cache", "source", "cat", "out", "concat", "final", "rot", "DKV", "NaN", "nan"};
    for (const auto& formula : formulas) {
        INFO(formula);
        const std::string latex = latex_formula(formula);
        CHECK(latex.find('?') == std::string::npos);
        CHECK(std::none_of(latex.begin(), latex.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; }));
        for (const auto& piece : text_pieces(formula, true)) {
            if (!piece.math) continue;
            for (std::sregex_iterator it(piece.text.begin(), piece.text.end(), upright), end; it != end; ++it) {
                std::string name = (*it)[1];
                // c_kv in "c_kv,t": a step's name
                const bool listed = std::find(names.begin(), names.end(), name) != names.end() || find_step(std::regex_replace(name, std::regex(R"(\\_)"), "_"));
                // dK_rot, dO_cat, dA_ij: a gradient's name
                const bool gradient = name.size() >= 2 && name[0] == 'd' && std::isupper(static_cast<unsigned char>(name[1]));
                INFO("upright in maths: " << name);
                CHECK((listed || gradient));
            }
        }
    }
}

TEST_CASE("the mask's formula keeps its words out of the maths in Markdown and LaTeX") {
    const std::string mask = "0 where a query may read a key, −∞ where it may not";
    CHECK(latex_formula(mask) == "$0$ where a query may read a key, $-\\infty $ where it may not");
    const std::string md = render_markdown(run_json(damaged_causal), only({"mask"}));
    CHECK(md.find("### `mask` $M = 0$ where a query may read a key, $-\\infty$ where it may not (3, 3), head 0") != std::string::npos);
    const std::string tex = render_latex(run_json(damaged_causal), only({"mask"}));
    CHECK(tex.find("$M$ = $0$ where a query may read a key, $-\\infty $ where it may not, shape") != std::string::npos);
    // explain's line: "-inf = a key" is not the product of -inf and a.
    CHECK(latex_prose("the masked row (scaled scores + mask; -inf = a key this query may not read)") ==
          "the masked row (scaled $\\mathrm{scores}+\\mathrm{mask}$; $-\\infty $ = a key this query may not read)");
    // Words in a formula's middle and brackets: "of KV head 0", "(kept)", "(given)".
    CHECK(latex_formula("K[0…3] of KV head 1") == "$K[0\\dots 3]$ of KV head 1");
    CHECK(latex_formula("1 where the draw ≥ p = 0.5 (kept), 0 where dropped") == "$1$ where the draw $\\ge p=0.5$ (kept), 0 where dropped");
    CHECK(latex_formula("(given)") == "(given)");
    CHECK(latex_formula("A ⊙ (dA − rowsum(dA ⊙ A))") == "$A\\odot (\\mathrm{dA}-\\mathrm{rowsum}(\\mathrm{dA}\\odot A))$");
}
