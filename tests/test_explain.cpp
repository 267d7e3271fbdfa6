// explain: the numbers it prints are the trace's numbers, rounded one way.
#include <algorithm>
#include <filesystem>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/explain.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/mask.hpp"
#include "attn_trace/pipeline.hpp"
#include "pipeline/stepwise_parts.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;
using namespace attn_trace::testing;

namespace {

const char* damaged = R"({"tokens": ["damaged", "on", "arrival"],
  "Q": [[0.5, 1.5], [0, 0], [1, 0]], "K": [[1, 0], [0, 0.5], [0, 2]], "V": [[2, 0], [0, 0], [0, 1]]})";

// Two query heads sharing one KV head, a causal mask: head 1's numbers differ from head 0's.
const char* grouped = R"({"Q": [[1, 0, 2, 1], [0, 1, -1, 1], [1, 1, 0, 2]], "K": [[1, 2], [0, 1], [2, -1]],
  "V": [[1, 0], [0, 1], [2, 2]], "heads": 2, "kv_heads": 1, "mask": "causal"})";

std::string explain_text(const std::string& json, const std::string& spec, bool row, int head = 0, int precision = 4,
                         Format format = Format::text) {
    const Problem problem = parse_problem(json, "test.json");
    const Trace trace = pipeline_full(problem, RunOptions{});
    return explain(trace, problem, row ? parse_row_spec(spec) : parse_cell_spec(spec), ExplainOptions{head, 0, precision, format});
}

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

}  // namespace

TEST_CASE("a score cell is the dot product term by term, then the scale") {
    const std::string text = explain_text(damaged, "scores[0,2]", false);
    CHECK(contains(text, "q_0 = (0.5, 1.5)"));
    CHECK(contains(text, "k_2 = (0, 2)"));
    CHECK(contains(text, "S_02 = q_0 · k_2 = 0.5 × 0 + 1.5 × 2 = 0 + 3 = 3"));
    CHECK(contains(text, "s · S_02 = 0.7071 × 3 = 2.1213"));
}

TEST_CASE("a weight row shows the max, the shifts, the exponentials, the sum and the quotients of the trace") {
    const Problem problem = parse_problem(damaged, "test.json");
    const Trace trace = pipeline_full(problem, RunOptions{});
    const std::string text = explain(trace, problem, parse_row_spec("weights[0]"), ExplainOptions{});
    const Matrix& exp = step_values(trace, "exp");
    const Matrix& weights = step_values(trace, "weights");
    // Every number printed is the trace's, rounded to 4 decimals.
    CHECK(contains(text, "m_0 = " + format_rounded(step_values(trace, "row_max")(0, 0), 4)));
    CHECK(contains(text, "ℓ_0 = " + format_rounded(exp(0, 0), 4) + " + " + format_rounded(exp(0, 1), 4) + " + 1 = " +
                             format_rounded(step_values(trace, "row_sum")(0, 0), 4)));
    for (int j = 0; j < 3; ++j) CHECK(contains(text, "A_0" + std::to_string(j) + " = " + format_rounded(exp(0, j), 4) + " / "));
    CHECK(contains(text, "= " + format_rounded(weights(0, 2), 4)));
    CHECK(contains(text, "0.7276"));  // damaged on arrival: "damaged" reads "arrival" with 0.728
}

TEST_CASE("a masked weight cell is exactly 0, and a masked row says so") {
    CHECK(contains(explain_text(grouped, "weights[0,2]", false), "key 2 is masked"));
    CHECK(contains(explain_text(grouped, "weights[1]", true), "e^(-inf) = 0"));
}

TEST_CASE("the output row adds every A_ij v_j and ends on the trace's output") {
    const std::string text = explain_text(damaged, "out[0]", true);
    CHECK(contains(text, "A_00 v_0 = 0.1242 × (2, 0) = (0.2484, 0)"));
    CHECK(contains(text, "A_02 v_2 = 0.7276 × (0, 1) = (0, 0.7276)"));
    CHECK(contains(text, "= (0.2484 + 0 + 0, 0 + 0 + 0.7276) = (0.2484, 0.7276)"));
}

TEST_CASE("explain reads the requested head, and a shared KV head under GQA") {
    const Problem problem = parse_problem(grouped, "test.json");
    const Trace trace = pipeline_full(problem, RunOptions{});
    const std::string head1 = explain(trace, problem, parse_cell_spec("scores[2,1]"), ExplainOptions{1, 0, 4, Format::text});
    CHECK(contains(head1, "q_2 = (0, 2)"));  // head 1 = columns 2-3 of Q
    CHECK(contains(head1, "KV head 0 (read by query head 1)"));
    CHECK(contains(head1, "= " + format_rounded(step_values(trace, "scores", 1)(2, 1), 4) + "\n"));
}

TEST_CASE("precision rounds every number of the explanation alike") {
    const std::string text = explain_text(damaged, "weights[0]", true, 0, 2);
    CHECK(contains(text, "A_02 = 1 / 1.37 = 0.73"));
    CHECK_FALSE(contains(text, "0.7276"));
}

TEST_CASE("markdown and latex write the same arithmetic in LaTeX notation") {
    CHECK(contains(explain_text(damaged, "scores[0,2]", false, 0, 4, Format::markdown), "$$\nS_{02} = q_{0} \\cdot k_{2} = 0.5 \\times 0 + 1.5 \\times 2"));
    const std::string tex = explain_text(damaged, "weights[0]", true, 0, 4, Format::latex);
    CHECK(contains(tex, "A_{00} = \\frac{0.1707}{1.3744} = 0.1242"));
    CHECK_FALSE(contains(tex, "Σ"));
}

TEST_CASE("bad specs and out-of-range indices are input errors") {
    CHECK_THROWS_AS(parse_cell_spec("scores[0]"), InputError);
    CHECK_THROWS_AS(parse_cell_spec("scores[0,1"), InputError);
    CHECK_THROWS_AS(parse_cell_spec("keys[0,1]"), InputError);
    CHECK_THROWS_AS(parse_row_spec("scores[0]"), InputError);
    CHECK_THROWS_AS(parse_row_spec("weights[-1]"), InputError);
    CHECK(parse_cell_spec(" weights [ 1 , 2 ] ").column == std::optional<std::size_t>(2));
    CHECK_THROWS_AS(explain_text(damaged, "scores[3,0]", false), InputError);
    CHECK_THROWS_AS(explain_text(damaged, "scores[0,3]", false), InputError);
    CHECK_THROWS_AS(explain_text(damaged, "out[5]", true), InputError);
    CHECK_THROWS_AS(explain_text(damaged, "out[0]", true, 1), InputError);
    CHECK_THROWS_AS(explain_text(damaged, "out[0]", true, 0, 4, Format::json), InputError);
}

// ---- Version 2: every step, computed on the rows it needs ----

namespace {

// Every problem file the project ships that `run` computes without error.
std::vector<Problem> shipped_problems() {
    std::vector<Problem> problems;
    for (const char* folder : {"examples", "tests/golden"}) {
        std::vector<std::filesystem::path> paths;
        for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(ATTN_TRACE_SOURCE_DIR) / folder))
            if (entry.path().extension() == ".json") paths.push_back(entry.path());
        std::sort(paths.begin(), paths.end());
        for (const auto& path : paths) {
            try {
                Problem problem = load_problem(path.string());
                pipeline_full(problem, RunOptions{});
                problems.push_back(std::move(problem));
            } catch (const InputError&) {
                // an example of an error (an empty row under the "error" policy): nothing to explain
            }
        }
    }
    return problems;
}

// Bit for bit, NaN equal to NaN.
bool same_values(const Matrix& a, const Matrix& b) {
    if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
    for (std::size_t k = 0; k < a.data().size(); ++k) {
        const double x = a.data()[k], y = b.data()[k];
        if (!(x == y || (std::isnan(x) && std::isnan(y)))) return false;
    }
    return true;
}

bool key_rows(StepName name) {
    return name == StepName::k || name == StepName::v || name == StepName::k_rot || name == StepName::x_source || name == StepName::c_kv || name == StepName::k_rope || name == StepName::reach;
}

}  // namespace

TEST_CASE("the rows explain computes equal the whole trace's, bit for bit, for every shipped problem") {
    const auto problems = shipped_problems();
    REQUIRE(problems.size() >= 20);
    for (const Problem& problem : problems)
        for (const Dtype dtype : {Dtype::f64, Dtype::f32}) {
            INFO(problem.file << " " << dtype_name(dtype));
            const Trace full = pipeline_full(problem, RunOptions{dtype, "cpu"});
            for (std::size_t b = 0; b < problem.batch; ++b)
                for (std::size_t i = 0; i < problem.n; ++i) {
                    const Trace rows = pipeline_full_rows(problem, RunOptions{dtype, "cpu"}, b, {i, 1});
                    for (const Step& step : rows.steps) {
                        INFO(step.name << " row " << i << " batch " << b);
                        const Step* want = full.find(step.name, step.head, step.batch, std::nullopt, std::nullopt);
                        REQUIRE(want != nullptr);
                        const Matrix expected = key_rows(step.name) ? want->values : block_of(want->values, i, 1, 0, want->values.cols());
                        CHECK(same_values(step.values, expected));
                    }
                }
        }
}

TEST_CASE("every cell of every run step explains the same numbers from its own row as from the whole trace") {
    for (const Problem& problem : shipped_problems()) {
        const Trace full = pipeline_full(problem, RunOptions{});
        const int last_batch = static_cast<int>(problem.batch) - 1;
        for (const int batch : {0, last_batch})
            for (const int head : {0, problem.heads - 1})
                for (const Step& step : full.steps) {
                    if ((step.head && *step.head != head) || (step.batch && *step.batch != batch)) continue;
                    // The corners of the step: first and last row and column.
                    for (const std::size_t i : {std::size_t{0}, step.values.rows() - 1})
                        for (const std::size_t j : {std::size_t{0}, step.values.cols() - 1}) {
                            const std::string spec = fmt::format("{}[{},{}]", step.name, i, j);
                            INFO(problem.file << " " << spec << " head " << head << " batch " << batch);
                            const ExplainOptions options{head, batch, 12, Format::text};
                            const ExplainTarget target = parse_cell_spec(spec);
                            CHECK(explain_problem(problem, RunOptions{}, target, options) == explain(full, problem, target, options));
                        }
                }
        for (const std::string spec : {"weights[0]", "out[0]"}) {
            const ExplainOptions options{0, 0, 12, Format::latex};
            CHECK(explain_problem(problem, RunOptions{}, parse_row_spec(spec), options) == explain(full, problem, parse_row_spec(spec), options));
        }
    }
}

TEST_CASE("a projection cell is x_i times a column of W plus the bias, a RoPE cell turns its pair") {
    const Problem damaged4 = load_problem(std::string(ATTN_TRACE_SOURCE_DIR) + "/examples/damaged_on_arrival_4x.json");
    const std::string k = explain_problem(damaged4, RunOptions{}, parse_cell_spec("k[2,1]"), ExplainOptions{});
    CHECK(contains(k, "x_2 = (0, 0, 4, 0)"));
    CHECK(contains(k, "k_21 = 0 × 0 + 0 × 0.5 + 4 × 2 + 0 × 0 = 0 + 0 + 8 + 0 = 8"));
    CHECK(step_values(pipeline_full(damaged4, RunOptions{}), "k")(2, 1) == 8);
    const Problem rope = load_problem(std::string(ATTN_TRACE_SOURCE_DIR) + "/tests/golden/rope_half.json");
    const std::string turned = explain_problem(rope, RunOptions{}, parse_cell_spec("q_rot[1,1]"), ExplainOptions{});
    CHECK(contains(turned, "half pairs: column 1 is paired with column 3"));
    CHECK(contains(turned, "= " + format_rounded(step_values(pipeline_full(rope, RunOptions{}), "q_rot")(1, 1), 4) + "\n"));
}

TEST_CASE("a mask cell names the rule: causal alignment, ALiBi slope times distance") {
    Problem problem = parse_problem(damaged, "test.json");
    problem.masks.push_back(parse_mask_string("causal", "test"));
    const std::string hidden = explain_problem(problem, RunOptions{}, parse_cell_spec("mask[0,2]"), ExplainOptions{});
    CHECK(contains(hidden, "query 0 reads keys j <= 0, so key 2 is hidden (-inf)"));
    CHECK(contains(hidden, "M_02 = -inf"));
    const Problem alibi = load_problem(std::string(ATTN_TRACE_SOURCE_DIR) + "/tests/golden/alibi.json");
    const std::string biased = explain_problem(alibi, RunOptions{}, parse_cell_spec("mask[3,0]"), ExplainOptions{1, 0, 4, Format::text});
    CHECK(contains(biased, "ALiBi: head 1's slope"));
    CHECK(contains(biased, "M_30 = " + format_rounded(step_values(pipeline_full(alibi, RunOptions{}), "mask", 1)(3, 0), 4)));
}

TEST_CASE("a decode step computed alone equals the whole decode's step t, and explains its weight") {
    for (const char* file : {"/examples/damaged_on_arrival.json", "/examples/gqa_8q_2kv.json", "/tests/golden/rope_half.json",
                             "/tests/models/llama_dynamic/problem_decode.json"}) {
        const Problem problem = load_problem(std::string(ATTN_TRACE_SOURCE_DIR) + file);
        for (const std::size_t prefill : {std::size_t{0}, std::size_t{2}}) {
            DecodeOptions decode;
            decode.prefill = prefill;
            const Trace whole = pipeline_decode(problem, RunOptions{}, decode);
            for (std::size_t t = prefill > 0 ? prefill - 1 : 0; t < problem.n; ++t) {
                const Trace step = pipeline_decode_step(problem, RunOptions{}, decode, 0, t);
                for (const Step& s : step.steps) {
                    INFO(file << " " << s.name << " t " << t << " prefill " << prefill);
                    const Step* want = whole.find(s.name, s.head, s.batch, static_cast<int>(t), std::nullopt);
                    REQUIRE(want != nullptr);
                    CHECK(same_values(s.values, want->values));
                }
            }
        }
    }
    const Problem problem = parse_problem(damaged, "test.json");
    ExplainSource at_t;
    at_t.t = 2;
    const Trace whole = pipeline_decode(problem, RunOptions{}, DecodeOptions{});
    const double a = whole.find(StepName::weights, 0, std::nullopt, 2, std::nullopt)->values(0, 1);
    CHECK(contains(explain_problem(problem, RunOptions{}, parse_cell_spec("weights[0,1]"), ExplainOptions{}, at_t), "= " + format_rounded(a, 4) + "\n"));
    CHECK(contains(explain_problem(problem, RunOptions{}, parse_cell_spec("k_cache[1,1]"), ExplainOptions{}, at_t), "k_11 = 0.5"));
}

TEST_CASE("a tiled block computed alone equals the whole pass's tiles, and explains the recurrence") {
    for (const char* file : {"/examples/damaged_on_arrival_causal.json", "/examples/gqa_8q_2kv.json", "/tests/golden/alibi.json"}) {
        const Problem problem = load_problem(std::string(ATTN_TRACE_SOURCE_DIR) + file);
        const TiledOptions tiled{2, 2};
        const Trace whole = pipeline_tiled(problem, RunOptions{}, tiled);
        for (std::size_t qb = 0; qb * 2 < problem.n; ++qb) {
            const std::size_t last = (problem.m + 1) / 2 - 1;
            const Trace block = pipeline_tiled_block(problem, RunOptions{}, tiled, 0, qb, last);
            for (const Step& s : block.steps) {
                INFO(file << " " << s.name << " tile " << (*s.tile)[0] << "," << (*s.tile)[1]);
                const Step* want = whole.find(s.name, s.head, s.batch, std::nullopt, s.tile);
                REQUIRE(want != nullptr);
                CHECK(same_values(s.values, want->values));
            }
        }
    }
    const Problem problem = parse_problem(damaged, "test.json");
    ExplainSource at_tile;
    at_tile.tile = std::array<std::size_t, 2>{0, 1};
    const Trace whole = pipeline_tiled(problem, RunOptions{}, TiledOptions{});
    const double l = whole.find(StepName::l, 0, std::nullopt, std::nullopt, std::array<int, 2>{0, 1})->values(0, 0);
    const std::string text = explain_problem(problem, RunOptions{}, parse_cell_spec("l[0,0]"), ExplainOptions{}, at_tile);
    CHECK(contains(text, "m_old = 0.5303"));
    CHECK(contains(text, "= " + format_rounded(l, 4) + "\n"));
}

TEST_CASE("a step the problem's trace does not have, and every out-of-range target, is an input error naming what exists") {
    const Problem problem = parse_problem(damaged, "test.json");
    const auto message = [&](const std::string& spec, ExplainSource source = {}) {
        try {
            explain_problem(problem, RunOptions{}, spec.find(',') == std::string::npos ? parse_row_spec(spec) : parse_cell_spec(spec), ExplainOptions{}, source);
        } catch (const InputError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(contains(message("q_rot[0,0]"), "the problem has no rope"));
    CHECK(contains(message("q_rot[0,0]"), "trace has: q, k, v, scores"));
    CHECK(contains(message("final[0,0]"), "no W_O"));
    CHECK(contains(message("capped[0,0]"), "no softcap"));
    CHECK(contains(message("q[3,0]"), "row 3 is out of range"));
    CHECK(contains(message("k[0,2]"), "column 2 is out of range"));
    ExplainSource decode;
    decode.t = 3;
    CHECK(contains(message("weights[0,0]", decode), "t 3: decode's steps are t = 0 to 2"));
    decode.t = 1;
    CHECK(contains(message("weights[0,2]", decode), "column 2 is out of range"));
    CHECK(contains(message("m[0,0]", decode), "decode steps have no 'm'"));
    CHECK(contains(message("weights[0]", decode), "explain one cell"));
    decode.decode.prefill = 2;
    decode.t = 0;
    CHECK(contains(message("weights[0,0]", decode), "the prefill block of 2 queries is the step t = 1"));
    ExplainSource tiled;
    tiled.tile = std::array<std::size_t, 2>{2, 0};
    CHECK(contains(message("l[0,0]", tiled), "tile 2,0: with Br = 2 and Bc = 2 the tiles are [0…1, 0…1]"));
    tiled.tile = std::array<std::size_t, 2>{0, 0};
    CHECK(contains(message("q[0,0]", tiled), "tiled steps have no 'q'"));
    Problem causal = problem;
    causal.masks.push_back(parse_mask_string("causal", "test"));
    try {
        ExplainSource skipped;
        skipped.tile = std::array<std::size_t, 2>{0, 1};
        explain_problem(causal, RunOptions{}, parse_cell_spec("l[0,0]"), ExplainOptions{}, skipped);
        FAIL("a skipped tile explained");
    } catch (const InputError& e) {
        CHECK(contains(e.what(), "the tile was skipped"));
    }
    ExplainSource both = decode;
    both.tile = std::array<std::size_t, 2>{0, 0};
    CHECK(contains(message("weights[0,0]", both), "exclude each other"));
}

TEST_CASE("the memory estimate grows with m, not n times m") {
    Problem small = parse_problem(damaged, "test.json");
    Problem big = small;
    big.n = big.m = 65536;
    CHECK(explain_bytes(big, ExplainSource{}) < 200e6);
    ExplainSource huge_tiles;
    huge_tiles.tile = std::array<std::size_t, 2>{0, 0};
    huge_tiles.tiled = TiledOptions{65536, 65536};
    CHECK(explain_bytes(big, huge_tiles) > 4.0 * (1 << 30));
}

TEST_CASE("a row of more than 16 keys shows the first 12 and the last 4, with an ellipsis in every format") {
    Problem problem = parse_problem(R"({"Q": {"random": {"shape": [40, 2], "seed": 1}}, "K": {"random": {"shape": [40, 2], "seed": 2}},
                                        "V": {"random": {"shape": [40, 2], "seed": 3}}})", "test.json");
    const std::string text = explain_problem(problem, RunOptions{}, parse_row_spec("weights[3]"), ExplainOptions{});
    CHECK(contains(text, "A_3,11 = "));
    CHECK_FALSE(contains(text, "A_3,12 = "));
    CHECK(contains(text, "…"));
    CHECK(contains(text, "A_3,39 = "));
    CHECK(contains(explain_problem(problem, RunOptions{}, parse_row_spec("weights[3]"), ExplainOptions{0, 0, 4, Format::latex}), "\\dots"));
}

TEST_CASE("with qk-norm and no RoPE a score cell multiplies the normed rows, as the scores do") {
    const Problem problem = parse_problem(damaged_keys + R"(, "qk_norm": {"q_weight": [1, 2], "k_weight": [0.5, 1]}})", "test.json");
    const std::string text = explain_problem(problem, RunOptions{}, parse_cell_spec("scores[0,1]"), ExplainOptions{});
    const Trace trace = pipeline_full(problem, RunOptions{});
    const Matrix &q = step_values(trace, "q_normed"), &k = step_values(trace, "k_normed");
    CHECK(contains(text, "the query: row 0 of Q after qk-norm"));
    CHECK(contains(text, fmt::format("q_0 = ({}, {})", format_rounded(q(0, 0), 4), format_rounded(q(0, 1), 4))));
    CHECK(contains(text, fmt::format("k_1 = ({}, {})", format_rounded(k(1, 0), 4), format_rounded(k(1, 1), 4))));
    CHECK(contains(text, "= " + format_rounded(step_values(trace, "scores")(0, 1), 4)));
}

TEST_CASE("with qk-norm, one head and no RoPE a q or k cell explains the projection, before the norm") {
    // The one-head path lends q, k and v to the head and takes them back; the projections
    // qk-norm keeps beside them (the q and k steps) must survive it.
    const Problem problem = parse_problem(damaged_keys + R"(, "qk_norm": {"q_weight": [1, 2], "k_weight": [0.5, 1]}})", "test.json");
    // By hand: x_0 = (1, 0, 0, 1), W_Q's column 0 = (0.5, 0, 1, 0); x_2 = (0, 0, 1, 0), W_K's column 1 = (0, 0.5, 2, 0).
    const std::string q = explain_problem(problem, RunOptions{}, parse_cell_spec("q[0,0]"), ExplainOptions{});
    CHECK(contains(q, "= 0.5\n"));
    const std::string k = explain_problem(problem, RunOptions{}, parse_cell_spec("k[2,1]"), ExplainOptions{});
    CHECK(contains(k, "= 2\n"));
}

TEST_CASE("explain names a row's max and sum by the symbols the trace gives row_max and row_sum", "[explain]") {
    // One notation in one handout (docs/NOTATION.md#writing-conventions): the trace's headings
    // and explain's arithmetic of the same cell write the same symbols, in text and in LaTeX.
    const Problem problem = parse_problem(R"({"Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[1, 2], [3, 4]]})", "<notation>");
    const Trace trace = pipeline_full(problem, RunOptions{});
    const std::string max = std::string(step_symbol(StepName::row_max)), sum = std::string(step_symbol(StepName::row_sum));
    CHECK(render(trace, Format::text, RenderOptions{}).find("row_max  " + max + " = rowmax(") != std::string::npos);
    const std::string text = explain(trace, problem, ExplainTarget{StepName::weights, 1, 0, "weights[1,0]"}, ExplainOptions{0, 0, 4, Format::text});
    CHECK(contains(text, "e^(z_10 - " + max + "_1) / " + sum + "_1"));
    CHECK_FALSE(contains(text, "max_1"));
    CHECK_FALSE(contains(text, "Σ_1"));
    const std::string latex = explain(trace, problem, ExplainTarget{StepName::weights, 1, 0, "weights[1,0]"}, ExplainOptions{0, 0, 4, Format::latex});
    CHECK(contains(latex, std::string(step_symbol_latex(StepName::row_max)) + "_{1}"));
    CHECK(contains(latex, std::string(step_symbol_latex(StepName::row_sum)) + "_{1}"));
}
