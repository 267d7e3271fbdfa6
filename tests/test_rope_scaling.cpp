// RoPE scaling, partial rotary and qk-norm as problem keys
// (docs/PROBLEM.md#rope-scaling-partial-rotary, docs/PROBLEM.md#qk-norm). The angles are
// transformers 5.25's own inverse frequencies (ROPE_INIT_FUNCTIONS) for the configs of
// tests/models/llama_dynamic, llama_yarn and llama3_scaling, in float32, not recomputed here.
#include <cmath>

#include <catch2/catch.hpp>

#include "attn_trace/attention_parts.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/problem.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;
using Catch::Contains;

namespace {

// Eight tokens of 16 numbers, one head of d_k = 8, with the given rope object.
Problem with_rope(const std::string& rope, std::size_t n = 8) {
    return parse_problem(fmt::format(R"({{"X": {{"random": {{"shape": [{}, 16], "seed": 1}}}}, "W_Q": {{"random": {{"shape": [16, 8], "seed": 2}}}},
                                        "W_K": {{"random": {{"shape": [16, 8], "seed": 3}}}}, "W_V": {{"random": {{"shape": [16, 8], "seed": 4}}}},
                                        "rope": {}}})",
                                     n, rope),
                         "rope.json");
}

void require_theta(const Rope& rope, const std::vector<double>& expected, double relative) {
    REQUIRE(rope.theta.size() == expected.size());
    for (std::size_t p = 0; p < expected.size(); ++p) CHECK(rope.theta[p] == Approx(expected[p]).epsilon(relative));
}

std::string error_of(const std::string& rope) {
    try {
        with_rope(rope);
    } catch (const InputError& error) {
        return error.what();
    }
    FAIL("no error for " << rope);
    return "";
}

}  // namespace

TEST_CASE("rope scaling: each type's angles are transformers' inverse frequencies") {
    SECTION("linear divides every angle by the factor") {
        const Problem p = with_rope(R"({"base": 100, "style": "half", "scaling": {"type": "linear", "factor": 2}})");
        require_theta(*p.rope, {0.5, 0.5 * std::pow(100.0, -0.25), 0.5 * 0.1, 0.5 * std::pow(100.0, -0.75)}, 1e-15);
        CHECK(p.rope->attention_factor == 1.0);
    }
    SECTION("dynamic raises the base once the length (9) passes the original context (4)") {
        const Problem p = with_rope(R"({"scaling": {"type": "dynamic", "factor": 2, "original_max_position_embeddings": 4}})", 9);
        require_theta(*p.rope, {1.0, 0.0658633709, 0.00433798414, 0.000285714283}, 1e-6);  // base 53140.3; transformers in float32
        const Problem short_one = with_rope(R"({"scaling": {"type": "dynamic", "factor": 2, "original_max_position_embeddings": 16}})", 9);
        require_theta(*short_one.rope, {1.0, 0.1, 0.01, 0.001}, 1e-12);  // within the context: the plain angles
    }
    SECTION("yarn keeps the fast pairs, divides the slow ones, and scales cos and sin") {
        const Problem p = with_rope(R"({"base": 100, "scaling": {"type": "yarn", "factor": 4, "original_max_position_embeddings": 4}})");
        require_theta(*p.rope, {1.0, 0.079056941, 0.0250000004, 0.00790569466}, 1e-6);
        CHECK(p.rope->attention_factor == Approx(1.1386294361119891).epsilon(1e-15));  // 1 + 0.1 ln 4
        const Problem given = with_rope(R"({"base": 100, "scaling": {"type": "yarn", "factor": 4, "original_max_position_embeddings": 4, "mscale": 1, "mscale_all_dim": 1}})");
        CHECK(given.rope->attention_factor == 1.0);  // m(s, 1) / m(s, 1)
    }
    SECTION("llama3 keeps the high band, divides the low band, blends the middle") {
        const Problem p = with_rope(R"({"base": 500, "scaling": {"type": "llama3", "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4,
                                                                "original_max_position_embeddings": 32}})");
        require_theta(*p.rope, {1.0, 0.0311854575, 0.00559017016, 0.00118217699}, 1e-6);  // float32 rounding in transformers
    }
}

TEST_CASE("partial rotary turns the first rotary_dims columns and passes the rest") {
    const Problem p = with_rope(R"({"base": 10000, "style": "half", "rotary_dims": 4})");
    REQUIRE(p.rope->theta.size() == 2);
    CHECK(p.rope->theta[1] == Approx(0.01).epsilon(1e-15));  // 10000^(−2/4)
    const Matrix x = testing::matrix({{1, 2, 3, 4, 5, 6, 7, 8}});
    const Matrix turned = apply_rope(x, *p.rope, {1.0}, Dtype::f64);
    // pairs (0, 2) and (1, 3); columns 4–7 unchanged
    CHECK(turned(0, 0) == Approx(std::cos(1.0) - 3 * std::sin(1.0)));
    CHECK(turned(0, 2) == Approx(std::sin(1.0) + 3 * std::cos(1.0)));
    CHECK(turned(0, 3) == Approx(2 * std::sin(0.01) + 4 * std::cos(0.01)));
    for (std::size_t c = 4; c < 8; ++c) CHECK(turned(0, c) == x(0, c));
}

TEST_CASE("rope scaling and qk_norm: bad values are named") {
    CHECK_THAT(error_of(R"({"scaling": {"type": "yarn", "factor": 4}})"),
               Contains("rope.json: $.rope.scaling: yarn scaling needs \"original_max_position_embeddings\""));
    CHECK_THAT(error_of(R"({"scaling": {"type": "longrope", "factor": 4}})"), Contains("$.rope.scaling.type: unknown scaling \"longrope\""));
    CHECK_THAT(error_of(R"({"scaling": {"type": "linear", "factor": 2, "beta_fast": 3}})"),
               Contains("$.rope.scaling.beta_fast: not a parameter of linear scaling"));
    CHECK_THAT(error_of(R"({"scaling": {"type": "linaer", "factor": 2}})"), Contains("(did you mean 'linear'?)"));
    CHECK_THAT(error_of(R"({"rotary_dims": 3})"), Contains("RoPE rotates pairs, so rotary_dims must be even, found 3"));
    CHECK_THAT(error_of(R"({"rotary_dims": 10})"), Contains("$.rope.rotary_dims"));
    const auto qk_error = [](const std::string& norm) {
        try {
            parse_problem(R"({"X": [[1, 0, 0, 1]], "W_Q": [[1, 0], [0, 1], [1, 1], [0, 0]], "W_K": [[1, 0], [0, 1], [1, 1], [0, 0]],
                             "W_V": [[1], [0], [0], [1]], "qk_norm": )" + norm + "}",
                          "qk.json");
        } catch (const InputError& error) {
            return std::string(error.what());
        }
        return std::string("no error");
    };
    CHECK_THAT(qk_error(R"({"q_weight": [1, 1, 1], "k_weight": [1, 1]})"), Contains("qk.json: $.qk_norm.q_weight: expected 2 values (d_k), found 3"));
    CHECK_THAT(qk_error(R"({"over": "token", "q_weight": [1, 1], "k_weight": [1, 1]})"), Contains("$.qk_norm.over: expected \"head\""));
    CHECK_THAT(qk_error(R"({"q_weight": [1, 1]})"), Contains("$.qk_norm: needs \"k_weight\""));
    CHECK_THAT(qk_error(R"({"q_weight": [1, 1], "k_weight": [1, 1], "weight_offset": 2})"), Contains("expected 0 (w) or 1 (1 + w"));
}

TEST_CASE("qk_norm: each row of a head has root mean square 1 before the weight") {
    const Problem p = parse_problem(R"({"X": [[1, 0, 0, 1], [0, 2, 1, 0]], "W_Q": [[1, 0, 2, 0], [0, 1, 0, 3], [1, 1, 1, 1], [0, 0, 1, 0]],
                                       "W_K": [[1, 0, 2, 0], [0, 1, 0, 3], [1, 1, 1, 1], [0, 0, 1, 0]], "W_V": [[1, 0], [0, 1], [0, 0], [1, 1]], "heads": 2, "kv_heads": 2,
                                       "qk_norm": {"q_weight": [1, 1], "k_weight": [2, 0.5], "eps": 1e-12}})",
                                    "qk.json");
    const Trace trace = pipeline_full(p, RunOptions{});
    const Matrix& q = testing::step_values(trace, "q_normed");
    // row 1 of Q is 2·(0, 1, 0, 3) + (1, 1, 1, 1) = (1, 3, 1, 7): head 0 (1, 3) has rms √5, head 1 (1, 7) has rms 5
    CHECK(q(1, 0) == Approx(1 / std::sqrt(5.0)).epsilon(1e-12));
    CHECK(q(1, 1) == Approx(3 / std::sqrt(5.0)).epsilon(1e-12));
    CHECK(q(1, 2) == Approx(0.2).epsilon(1e-12));
    CHECK(q(1, 3) == Approx(1.4).epsilon(1e-12));
    const Matrix& k = testing::step_values(trace, "k_normed");
    CHECK(k(1, 2) == Approx(2 * 0.2).epsilon(1e-12));  // the weight of a head's column 0, for every head
    CHECK(k(1, 3) == Approx(0.5 * 1.4).epsilon(1e-12));
}
