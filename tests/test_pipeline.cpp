// The full pipeline against hand-computed values and invariants (the seeds'
// worked examples are also run through `check` in tests/cli/examples.sh).
#include <catch2/catch.hpp>
#include <cmath>

#include "attn_trace/errors.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/tolerances.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;
using namespace attn_trace::testing;

namespace {

std::string with(const std::string& extra) { return damaged_keys + extra + "}"; }

}  // namespace

TEST_CASE("the steps of 'damaged on arrival' (a teaching text's worked example) by hand") {
    const Trace trace = run_json(with(""));
    REQUIRE(step_values(trace, "scores").data() == matrix({{0.5, 0.75, 3.0}, {0, 0, 0}, {1, 0, 0}}).data());
    // damaged's row: e^(z - max) / Σ with z = s·(0.5, 0.75, 3), s = 1/√2.
    const double s = 1 / std::sqrt(2.0);
    const double e0 = std::exp(s * 0.5 - s * 3), e1 = std::exp(s * 0.75 - s * 3), sum = e0 + e1 + 1;
    const Matrix& w = step_values(trace, "weights");
    REQUIRE(w(0, 0) == Approx(e0 / sum).margin(1e-15));
    REQUIRE(w(0, 2) == Approx(1 / sum).margin(1e-15));
    REQUIRE(step_values(trace, "row_max")(0, 0) == Approx(s * 3).margin(1e-15));
    REQUIRE(step_values(trace, "row_sum")(0, 0) == Approx(sum).margin(1e-15));
    // The seed: 0.124, 0.148, 0.728 and output (0.248, 0.728).
    REQUIRE(matches(w, matrix({{0.124, 0.148, 0.728}, {0.333, 0.333, 0.333}, {0.503, 0.248, 0.248}}), 5e-4));
    REQUIRE(matches(step_values(trace, "out"), matrix({{0.248, 0.728}, {0.667, 0.333}, {1.007, 0.248}}), 5e-4));
}

TEST_CASE("the steps come in the documented order with formulas and shapes") {
    const Trace trace = run_json(with(R"(, "mask": "causal")"));
    std::vector<std::string> names;
    for (const auto& step : trace.steps) names.push_back(step_name(step.name));
    REQUIRE(names == std::vector<std::string>{"x", "q", "k", "v", "scores", "scaled", "mask", "masked", "row_max", "exp", "row_sum", "weights", "out"});
    for (const auto& step : trace.steps) REQUIRE_FALSE(step.formula.empty());
    REQUIRE(step_values(trace, "row_max").cols() == 1);
    REQUIRE(trace.steps[4].head == 0);   // per-head steps carry their head
    REQUIRE_FALSE(trace.steps[1].head);  // q is all heads side by side
}

TEST_CASE("scale: auto is 1/sqrt(d_k), none is 1, a number is used as given") {
    const Matrix scores = step_values(run_json(with("")), "scores");
    const Matrix autoscaled = step_values(run_json(with(R"(, "scale": "auto")")), "scaled");
    const Matrix unscaled = step_values(run_json(with(R"(, "scale": "none")")), "scaled");
    const Matrix quarter = step_values(run_json(with(R"(, "scale": 0.25)")), "scaled");
    REQUIRE(autoscaled(0, 2) == 3.0 / std::sqrt(2.0));
    REQUIRE(unscaled.data() == scores.data());
    REQUIRE(quarter(0, 2) == 0.75);
}

TEST_CASE("empty rows: error names the row, zero gives zeros, nan gives NaN") {
    const std::string blocked = R"(, "mask": {"key_valid": [0, 0, 0]})";
    REQUIRE_THROWS_WITH(run_json(with(blocked)), Catch::Contains("query 0 (\"damaged\") can read no key") && Catch::Contains("empty_rows"));
    const Trace zero = run_json(with(blocked + R"(, "empty_rows": "zero")"));
    for (double x : step_values(zero, "weights").data()) REQUIRE(x == 0.0);
    for (double x : step_values(zero, "out").data()) REQUIRE(x == 0.0);
    REQUIRE_THAT(note_text(zero.notes.back()), Catch::Contains("empty_rows = zero"));
    const Trace nan = run_json(with(blocked + R"(, "empty_rows": "nan")"));
    for (double x : step_values(nan, "weights").data()) REQUIRE(std::isnan(x));
    REQUIRE(step_values(nan, "row_max")(0, 0) == -inf);
}

TEST_CASE("float32 is computed in float32 and agrees with float64 to float32 rounding") {
    const std::string problem = R"({"Q": {"random": {"shape": [9, 8], "seed": 4}}, "K": {"random": {"shape": [11, 8], "seed": 5}},
                                   "V": {"random": {"shape": [11, 5], "seed": 6}}, "mask": "causal-bottom-right"})";
    const Trace f64 = run_json(problem, Dtype::f64);
    const Trace f32 = run_json(problem, Dtype::f32);
    REQUIRE(f32.problem.dtype == "f32");
    for (const char* name : {"scores", "weights", "out"}) {
        const Matrix& a = step_values(f32, name);
        REQUIRE(compare_matrices(a, step_values(f64, name), tolerances::f32_vs_f64).passed());
        for (double x : a.data()) REQUIRE((std::isinf(x) || static_cast<double>(static_cast<float>(x)) == x));  // float32 values
    }
    // Not the same numbers: f32 really rounds.
    REQUIRE(step_values(f32, "out").data() != step_values(f64, "out").data());
}

TEST_CASE("multi-head: head h uses columns h·d_k …, concat joins the heads, final applies W_O + b_O") {
    const std::string problem = R"({"X": [[1, 2], [3, 4], [5, 6]], "heads": 2,
        "W_Q": [[1, 0, 0, 1], [0, 1, 1, 0]], "W_K": [[1, 0, 1, 0], [0, 1, 0, 1]], "W_V": [[1, 2, 3, 4], [5, 6, 7, 8]],
        "W_O": [[1, 0], [0, 1], [1, 0], [0, 1]], "b_O": [10, 20], "scale": "none"})";
    const Trace trace = run_json(problem);
    const Matrix& q = step_values(trace, "q");
    const Matrix& k = step_values(trace, "k");
    // head 1's score (0, 1) is q[0, 2:4] · k[1, 2:4]
    REQUIRE(step_values(trace, "scores", 1)(0, 1) == q(0, 2) * k(1, 2) + q(0, 3) * k(1, 3));
    const Matrix& concat = step_values(trace, "concat");
    REQUIRE(concat.cols() == 4);
    REQUIRE(concat(2, 3) == step_values(trace, "out", 1)(2, 1));
    const Matrix& final_out = step_values(trace, "final");
    REQUIRE(final_out(1, 0) == Approx(concat(1, 0) + concat(1, 2) + 10).margin(1e-12));
}

TEST_CASE("grouped-query: query head h reads KV head h / (H / H_kv), and the trace says so") {
    const std::string problem = R"({"Q": {"random": {"shape": [3, 8], "seed": 1}}, "K": {"random": {"shape": [3, 4], "seed": 2}},
                                   "V": {"random": {"shape": [3, 4], "seed": 3}}, "heads": 4, "kv_heads": 2})";
    const Trace trace = run_json(problem);
    REQUIRE_THAT(note_text(trace.notes.front()), Catch::Contains("query heads 0-1 read KV head 0") && Catch::Contains("query heads 2-3 read KV head 1"));
    // Heads 2 and 3 share KV head 1: with the same query they would agree; check the
    // formula names the KV head and the output uses V's second half.
    const auto* out3 = trace.find(StepName::out, 3, std::nullopt, std::nullopt, std::nullopt);
    REQUIRE(out3->formula == "A V_1 (v columns 2…3)");
    // Issue 11, finding 11: a head's table names the columns it reads.
    REQUIRE(trace.find(StepName::scores, 3, std::nullopt, std::nullopt, std::nullopt)->formula == "Q K_1ᵀ (q columns 6…7, k columns 2…3)");
    REQUIRE_THROWS_WITH(run_json(R"({"Q": [[1, 2, 3]], "K": [[1, 2, 3]], "V": [[1]], "heads": 3, "kv_heads": 2})"),
                        Catch::Contains("$.kv_heads") && Catch::Contains("must divide heads (3)"));
}

TEST_CASE("cross-attention: K and V come from X_source with m rows") {
    const std::string problem = R"({"X": [[1, 0]], "X_source": [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
        "W_Q": [[1], [0]], "W_K": [[1], [2], [3]], "W_V": [[1], [1], [1]], "source_tokens": ["a", "b", "c"], "scale": "none"})";
    const Trace trace = run_json(problem);
    REQUIRE(trace.problem.m == 3);
    REQUIRE(step_values(trace, "scores").data() == matrix({{1, 2, 3}}).data());
    REQUIRE(trace.find(StepName::scores, 0, std::nullopt, std::nullopt, std::nullopt)->column_labels == std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("batches: each sequence has its own steps and lengths hide its padded keys") {
    const std::string problem = R"({"X": {"random": {"shape": [2, 3, 4], "seed": 9}}, "W_Q": {"random": {"shape": [4, 2], "seed": 1}},
        "W_K": {"random": {"shape": [4, 2], "seed": 2}}, "W_V": {"random": {"shape": [4, 2], "seed": 3}}, "lengths": [3, 1]})";
    const Trace trace = run_json(problem);
    const Matrix& w1 = step_values(trace, "weights", 0, 1);
    for (std::size_t i = 0; i < 3; ++i) {
        REQUIRE(w1(i, 0) == 1.0);
        REQUIRE(w1(i, 1) == 0.0);
    }
    REQUIRE(step_values(trace, "weights", 0, 0)(0, 2) > 0.0);
}

TEST_CASE("RoPE keeps norms and is the identity at position 0") {
    const std::string problem = R"({"Q": {"random": {"shape": [3, 4], "seed": 1}}, "K": {"random": {"shape": [3, 4], "seed": 2}},
        "V": {"random": {"shape": [3, 2], "seed": 3}}, "rope": {"base": 10000}})";
    const Trace trace = run_json(problem);
    const Matrix& q = step_values(trace, "q");
    const Matrix& rotated = step_values(trace, "q_rot");
    for (std::size_t j = 0; j < 4; ++j) REQUIRE(rotated(0, j) == Approx(q(0, j)).margin(1e-15));
    for (std::size_t i = 0; i < 3; ++i) {
        double before = 0, after = 0;
        for (std::size_t j = 0; j < 4; ++j) {
            before += q(i, j) * q(i, j);
            after += rotated(i, j) * rotated(i, j);
        }
        REQUIRE(after == Approx(before).epsilon(1e-12));
    }
}

TEST_CASE("softcap bounds the scaled scores by c, before the mask") {
    const Trace trace = run_json(with(R"(, "softcap": 0.5, "mask": "causal", "scale": "none")"));
    const Matrix& capped = step_values(trace, "capped");
    for (double x : capped.data()) REQUIRE(std::fabs(x) < 0.5);
    REQUIRE(capped(0, 2) == Approx(0.5 * std::tanh(3.0 / 0.5)).margin(1e-15));
    REQUIRE(step_values(trace, "masked")(0, 2) == -inf);  // the mask still blocks after the cap
}

TEST_CASE("Q, K, V per head (heads, rows, width) equal the same columns side by side, and set heads") {
    const Trace per_head = run_json(R"({"Q": [[[1, 0]], [[0, 1]]], "K": [[[1, 0], [0, 1]]], "V": [[[1], [2]]]})");
    REQUIRE(per_head.problem.heads == 2);
    REQUIRE(per_head.problem.kv_heads == 1);
    const Trace side_by_side = run_json(R"({"Q": [[1, 0, 0, 1]], "K": [[1, 0], [0, 1]], "V": [[1], [2]], "heads": 2, "kv_heads": 1})");
    for (int h = 0; h < 2; ++h) REQUIRE(step_values(per_head, "out", h).data() == step_values(side_by_side, "out", h).data());
    REQUIRE_THROWS_WITH(run_json(R"({"Q": [[[1, 0]], [[0, 1]]], "K": [[[1, 0]]], "V": [[[1]]], "heads": 3})"),
                        Catch::Contains("$.Q: a per-head Q is (3, rows, width) with heads = 3, found 2 heads"));
}
