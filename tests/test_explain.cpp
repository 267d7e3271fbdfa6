// explain: the numbers it prints are the trace's numbers, rounded one way.
#include <catch2/catch.hpp>

#include "attn_trace/errors.hpp"
#include "attn_trace/explain.hpp"
#include "attn_trace/render.hpp"
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
                         const std::string& format = "text") {
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
    CHECK(contains(text, "max_0 = " + format_rounded(step_values(trace, "row_max")(0, 0), 4)));
    CHECK(contains(text, "Σ_0 = " + format_rounded(exp(0, 0), 4) + " + " + format_rounded(exp(0, 1), 4) + " + 1 = " +
                             format_rounded(step_values(trace, "row_sum")(0, 0), 4)));
    for (int j = 0; j < 3; ++j) CHECK(contains(text, "A_0" + std::to_string(j) + " = " + format_rounded(exp(0, j), 4) + " / "));
    CHECK(contains(text, "= " + format_rounded(weights(0, 2), 4)));
    CHECK(contains(text, "0.7276"));  // seed 001: "damaged" reads "arrival" with 0.728
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
    const std::string head1 = explain(trace, problem, parse_cell_spec("scores[2,1]"), ExplainOptions{1, 0, 4, "text"});
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
    CHECK(contains(explain_text(damaged, "scores[0,2]", false, 0, 4, "markdown"), "```math\nS_{02} = q_{0} \\cdot k_{2} = 0.5 \\times 0 + 1.5 \\times 2"));
    const std::string tex = explain_text(damaged, "weights[0]", true, 0, 4, "latex");
    CHECK(contains(tex, "\\[ A_{00} = \\frac{0.1707}{1.3744} = 0.1242"));
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
    CHECK_THROWS_AS(explain_text(damaged, "out[0]", true, 0, 4, "json"), InputError);
}
