// Pitfalls: the wrong computations give the wrong numbers of the teaching text "damaged on arrival", the right ones its right numbers.
#include <catch2/catch.hpp>

#include "attn_trace/errors.hpp"
#include "attn_trace/pitfalls.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;
using namespace attn_trace::testing;

namespace {

const char* damaged_causal = R"({"Q": [[0.5, 1.5], [0, 0], [1, 0]], "K": [[1, 0], [0, 0.5], [0, 2]], "V": [[2, 0], [0, 0], [0, 1]], "mask": "causal"})";

Pitfall pitfall(const std::string& name, const std::string& json = damaged_causal) {
    const Problem problem = parse_problem(json, "test.json");
    return compute_pitfall(name, problem, pipeline_full(problem, RunOptions{}), RunOptions{});
}

double row_sum(const Matrix& m, std::size_t i) {
    double sum = 0;
    for (std::size_t j = 0; j < m.cols(); ++j) sum += m(i, j);
    return sum;
}

}  // namespace

TEST_CASE("zero-scores: row damaged under causal gives 0.416, 0.292, 0.292 (damaged on arrival)") {
    const auto p = pitfall("zero-scores");
    CHECK(matches(p.heads[0].wrong_weights.values.columns(0, 3), matrix({{0.416, 0.292, 0.292}, {1 / 3.0, 1 / 3.0, 1 / 3.0}, {0.5035, 0.2483, 0.2483}}), 5e-4));
    CHECK(matches(p.heads[0].right_weights.values, matrix({{1, 0, 0}, {0.5, 0.5, 0}, {0.5035, 0.2483, 0.2483}}), 5e-4));
}

TEST_CASE("bool-polarity: outputs (0, 0.8308), (0, 1), (0, 0) against (2, 0), (1, 0), (1.007, 0.2483) (damaged on arrival)") {
    const auto p = pitfall("bool-polarity");
    CHECK(matches(p.heads[0].wrong_out.values, matrix({{0, 0.8308}, {0, 1}, {0, 0}}), 5e-4));
    CHECK(matches(p.heads[0].right_out.values, matrix({{2, 0}, {1, 0}, {1.007, 0.2483}}), 5e-4));
}

TEST_CASE("mask-after-softmax: blocked weights are 0 and the rows no longer sum to 1") {
    const Pitfall p = pitfall("mask-after-softmax");
    const Matrix& w = p.heads[0].wrong_weights.values;
    CHECK(w(0, 1) == 0.0);
    CHECK(row_sum(w, 0) == Approx(0.1242).margin(1e-4));
    CHECK(row_sum(w, 2) == Approx(1.0));
}

TEST_CASE("column-softmax: columns sum to 1, rows do not") {
    const Pitfall p = pitfall("column-softmax");
    const Matrix& w = p.heads[0].wrong_weights.values;
    for (std::size_t j = 0; j < 3; ++j) CHECK(w(0, j) + w(1, j) + w(2, j) == Approx(1.0));
    CHECK(row_sum(w, 0) != Approx(1.0));
}

TEST_CASE("no-scale: softmax of the raw scores is sharper than the scaled one") {
    const auto p = pitfall("no-scale", R"({"Q": [[0.5, 1.5], [0, 0], [1, 0]], "K": [[1, 0], [0, 0.5], [0, 2]], "V": [[2, 0], [0, 0], [0, 1]]})");
    // e^3 / (e^0.5 + e^0.75 + e^3): "damaged" gives arrival more weight than 0.728.
    CHECK(p.heads[0].wrong_weights.values(0, 2) == Approx(0.8421).margin(1e-4));
    CHECK(p.heads[0].right_weights.values(0, 2) == Approx(0.7276).margin(1e-4));
}

TEST_CASE("pitfalls that need a mask refuse a problem without one, unknown names are input errors") {
    const char* no_mask = R"({"Q": [[1, 0]], "K": [[1, 0], [0, 1]], "V": [[1, 2], [3, 4]]})";
    CHECK_THROWS_AS(pitfall("zero-scores", no_mask), InputError);
    CHECK_THROWS_AS(pitfall("bool-polarity", no_mask), InputError);
    CHECK_NOTHROW(pitfall("no-scale", no_mask));
    CHECK_THROWS_AS(pitfall("softmax-twice"), InputError);
}

TEST_CASE("every head gets its own comparison, reading its own KV head") {
    const char* grouped = R"({"Q": [[1, 0, 0, 1], [0, 1, 1, 0]], "K": [[1, 0], [0, 1]], "V": [[1, 2], [3, 4]], "heads": 2, "kv_heads": 1, "mask": "causal"})";
    const auto p = pitfall("zero-scores", grouped);
    REQUIRE(p.heads.size() == 2);
    CHECK(*p.heads[1].wrong_weights.head == 1);
    const std::string text = render_pitfall(p, RenderOptions{});
    CHECK(text.find("why it is wrong: a blocked score of 0 still counts") != std::string::npos);
    CHECK(text.find("│") != std::string::npos);
}
