// One notation (docs/NOTATION.md): every step of every command's trace, rendered in every
// format a trace is printed in, is headed by its name and the symbol the step table
// gives it, and decode and tiled record s · Q Kᵀ + M as `masked`, never `scores`.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "attn_trace/check.hpp"
#include "attn_trace/explain.hpp"
#include "attn_trace/permutation.hpp"
#include "attn_trace/render_html.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;
using attn_trace::testing::run_json;

namespace {

Problem example(const char* name) { return load_problem(std::string(ATTN_TRACE_SOURCE_DIR) + "/examples/" + name); }

// Traces of every command, together holding every step some command produces.
std::vector<Trace> every_commands_traces() {
    const RunOptions options{Dtype::f64, "cpu"};
    std::vector<Trace> traces;
    for (const char* name : {"damaged_on_arrival.json", "mla_small.json", "gqa_8q_2kv.json", "dropout_train.json", "sparse_bigbird.json", "cross_attention.json"})
        traces.push_back(pipeline_full(example(name), options));
    // RoPE and a softcap: q_rot, k_rot, capped and their gradients.
    const Problem rope = parse_problem(R"({"Q": [[1, 0], [0, 1]], "K": [[1, 1], [0, 1]], "V": [[1, 2], [3, 4]], "softcap": 5,
                                         "rope": {"base": 100}, "mask": "causal"})",
                                       "rope.json");
    traces.push_back(pipeline_full(rope, options));
    // A model directory's layer with qk-norm: q_normed, k_normed.
    traces.push_back(pipeline_full(load_problem(std::string(ATTN_TRACE_SOURCE_DIR) + "/tests/models/qwen3_qknorm/problem.json"), options));
    // DeepSeek-V3's MLA with both latent norms: c_kv_normed, c_q_normed.
    traces.push_back(pipeline_full(load_problem(std::string(ATTN_TRACE_SOURCE_DIR) + "/tests/models/deepseek_v3/problem.json"), options));
    const Problem p = example("damaged_on_arrival.json");
    traces.push_back(pipeline_decode(p, options, {}));
    traces.push_back(pipeline_tiled(p, options, {}));
    traces.push_back(pipeline_decode(example("mla_small.json"), options, {}));
    PermuteOptions permute;
    permute.perm = random_permutation(p.n, 1);
    traces.push_back(permutation_trace(p, options, permute));
    GradOptions grad;
    grad.row = 0;
    traces.push_back(pipeline_grad(p, options, grad));
    traces.push_back(pipeline_grad(rope, options, grad));
    traces.push_back(pipeline_grad(example("dropout_train.json"), options, grad));
    traces.push_back(pipeline_grad(example("cross_attention.json"), options, grad));
    // An output projection: grad_W_O and grad_final.
    traces.push_back(pipeline_grad(load_problem(std::string(ATTN_TRACE_SOURCE_DIR) + "/tests/golden/grad_cross.json"), options, grad));
    grad.row.reset();
    grad.tiled = TiledOptions{2, 2};
    traces.push_back(pipeline_grad(p, options, grad));
    return traces;
}

// The trace of one step alone, without notes, so each format writes one heading.
Trace alone(const Trace& trace, const Step& step) {
    Trace one = trace;
    one.steps = {step};
    one.notes.clear();
    return one;
}

bool has_line_starting(const std::string& text, const std::string& start) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
        if (line.rfind(start, 0) == 0) return true;
    return false;
}

}  // namespace

TEST_CASE("every step of every command is headed by its name and the table's symbol, in every format") {
    std::vector<StepName> seen;
    RenderOptions options;
    options.header = false;
    for (const Trace& trace : every_commands_traces()) {
        for (const Step& step : trace.steps) {
            const std::string name = step_name(step.name), symbol(step_symbol(step.name)), latex(step_symbol_latex(step.name));
            INFO(trace.command << "'s step " << name << ", symbol " << symbol);
            REQUIRE_FALSE(symbol.empty());
            seen.push_back(step.name);
            const Trace one = alone(trace, step);
            // text: "weights  A = …" or "q  Q (given)"
            const std::string text = render(one, Format::text, options);
            CHECK((has_line_starting(text, name + "  " + symbol + " = ") || has_line_starting(text, name + "  " + symbol + " (")));
            // Markdown: ### `weights` $A = …$ (the symbol and formula as maths, docs/NOTATION.md#headings)
            CHECK(has_line_starting(render(one, Format::markdown, options), "### `" + name + "` $" + latex));
            // LaTeX: \textbf{weights}…: $A$ = …, with ℓ as \ell
            const std::string tex = render(one, Format::latex, options);
            CHECK(tex.find("\\textbf{" + latex_text(name) + "}") != std::string::npos);
            CHECK(tex.find(": $" + latex + "$") != std::string::npos);
            CHECK(tex.find("ℓ") == std::string::npos);
            // HTML: <h2><code>weights</code> <span class="formula">A = …
            CHECK(render(one, Format::html, options).find("<h2><code>" + name + "</code> <span class=\"formula\">" + html_escape(symbol)) != std::string::npos);
            // JSON: the step's name and symbol
            const auto json = nlohmann::json::parse(render(one, Format::json, options));
            CHECK(json["steps"][0]["name"] == name);
            CHECK(json["steps"][0]["symbol"] == symbol);
            // CSV: the name in the first cell
            CHECK(render(one, Format::csv, options).rfind(name + ",", 0) == 0);
        }
    }
    for (const StepInfo& info : step_table()) {
        const StepName step = info.id;
        if (!info.commands || step == StepName::reach || step == StepName::c_q || step == StepName::kr_cache || step == StepName::grad_b_Q ||
            step == StepName::grad_b_K || step == StepName::grad_b_V || step == StepName::grad_b_O)
            continue;  // no example above has them: reach needs a multi-layer pattern, c_q and kr_cache MLA with those parts, the biases b_…
        INFO(step);
        CHECK(std::find(seen.begin(), seen.end(), step) != seen.end());
    }
}

TEST_CASE("decode and tiled record s · Q Kᵀ + M as masked, as run does, and no step named scores") {
    const RunOptions options{Dtype::f64, "cpu"};
    const Problem p = example("damaged_on_arrival.json");
    for (const Trace& trace : {pipeline_decode(p, options, {}), pipeline_tiled(p, options, {})}) {
        INFO(trace.command);
        CHECK(trace.find(StepName::scores, 0, std::nullopt, std::nullopt, std::nullopt) == nullptr);
        bool masked = false;
        for (const Step& step : trace.steps) {
            CHECK(step.name != StepName::scores);
            masked = masked || step.name == StepName::masked;
        }
        CHECK(masked);
    }
    // Decode's step 2: query 2 against the cache, s = 1/√d_k, index ranges as Q[2].
    const Trace decode = pipeline_decode(p, options, {});
    const Step* z = decode.find(StepName::masked, 0, std::nullopt, 2, std::nullopt);
    REQUIRE(z);
    CHECK(z->formula == "s · Q[2] K_cacheᵀ + M");
    CHECK(step_info(StepName::scores).commands == by_run);
}

TEST_CASE("without a mask the softmax's formulas name the scaled scores, not masked or Z") {
    const Trace unmasked = run_json(R"({"Q": [[1, 0]], "K": [[1, 0], [0, 1]], "V": [[1, 2], [3, 4]]})");
    CHECK(unmasked.find(StepName::row_max, 0, std::nullopt, std::nullopt, std::nullopt)->formula == "rowmax(S_s)");
    CHECK(unmasked.find(StepName::exp, 0, std::nullopt, std::nullopt, std::nullopt)->formula == "exp(S_s − m)");
    CHECK(unmasked.find(StepName::masked, 0, std::nullopt, std::nullopt, std::nullopt)->formula == "S_s + M = S_s (no mask: M = 0)");
    const Trace causal = run_json(R"({"Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[1, 2], [3, 4]], "mask": "causal"})");
    CHECK(causal.find(StepName::row_max, 0, std::nullopt, std::nullopt, std::nullopt)->formula == "rowmax(Z)");
    CHECK(causal.find(StepName::weights, 0, std::nullopt, std::nullopt, std::nullopt)->formula == "E / ℓ = softmax(Z)");
}

TEST_CASE("check reads an old expect entry or golden step named scores with t or tile as masked, and says so") {
    CheckOptions options;
    options.run = {Dtype::f64, "cpu"};
    options.tiled = {2, 2};
    // The examples were written before the rename: they keep passing through it.
    const CheckResult tiled = check_expectations(example("damaged_on_arrival_tiled.json"), options);
    CHECK(tiled.passed());
    CHECK(tiled.command == "tiled");
    REQUIRE(tiled.notes.size() == 1);
    CHECK(tiled.notes[0] ==
          "2 expect entries named 'scores' with a t or a tile read as 'masked': decode and tiled call s · Q Kᵀ + M 'masked', as run does; rename them to keep "
          "this note away");
    CHECK(tiled.steps[0].label.rfind("masked", 0) == 0);
    const CheckResult decode = check_expectations(example("damaged_on_arrival_decode.json"), options);
    CHECK(decode.passed());
    REQUIRE(decode.notes.size() == 1);
    CHECK(decode.notes[0].rfind("1 expect entry named 'scores'", 0) == 0);
    // A golden tiled trace as the old name wrote it: every masked step called scores.
    const Problem p = example("damaged_on_arrival.json");
    std::string json = render(pipeline_tiled(p, options.run, options.tiled), Format::json, RenderOptions{});
    std::size_t renamed = 0;
    for (std::size_t at = json.find("\"name\":\"masked\""); at != std::string::npos; at = json.find("\"name\":\"masked\"", at), ++renamed)
        json.replace(at, 15, "\"name\":\"scores\"");
    REQUIRE(renamed == 4);  // 2 × 2 tiles, none skipped
    const CheckResult golden = check_golden(p, parse_golden_trace(json, "old_tiled.json"), options);
    CHECK(golden.passed());
    CHECK(std::find(golden.notes.begin(), golden.notes.end(),
                    "4 golden steps named 'scores' with a t or a tile read as 'masked': decode and tiled call s · Q Kᵀ + M 'masked', as run does; rename them "
                    "to keep this note away") != golden.notes.end());
    // A run entry named scores is run's Q Kᵀ, and no note.
    const CheckResult run = check_expectations(example("two_tokens_causal.json"), options);
    CHECK(run.passed());
    CHECK(run.notes.empty());
}

TEST_CASE("explain takes decode's and tiled's masked cells, and names masked when asked for their scores") {
    const Problem p = example("damaged_on_arrival.json");
    ExplainSource at_t;
    at_t.t = 2;
    ExplainSource at_tile;
    at_tile.tile = std::array<std::size_t, 2>{1, 0};
    for (const ExplainSource& source : {at_t, at_tile}) {
        const std::string command = source.t ? "decode" : "tiled";
        INFO(command);
        CHECK_THROWS_WITH(explain_problem(p, RunOptions{}, parse_cell_spec("scores[0,1]"), ExplainOptions{}, source),
                          Catch::Contains(command + " calls s · Q Kᵀ + M 'masked', as run does: explain 'masked[0,1]'"));
        const std::string text = explain_problem(p, RunOptions{}, parse_cell_spec("masked[0,1]"), ExplainOptions{}, source);
        CHECK(text.rfind("masked[0,1]", 0) == 0);
    }
}
