// Every mask form of docs/PROBLEM.md#masks, both causal alignments, and the invariants the
// weights must keep under them: blocked cells exactly 0, visible rows sum to 1.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/mask.hpp"
#include "attn_trace/attention_parts.hpp"
#include "attn_trace/problem.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;
using namespace attn_trace::testing;

namespace {

// The visible pattern of a mask as 1 (may read) / 0 (may not), for readable expectations.
Matrix visible(const Matrix& mask) {
    Matrix out(mask.rows(), mask.cols());
    for (std::size_t i = 0; i < mask.rows(); ++i)
        for (std::size_t j = 0; j < mask.cols(); ++j) out(i, j) = mask(i, j) == -inf ? 0.0 : 1.0;
    return out;
}

Matrix mask_of(const std::string& spec, std::size_t n, std::size_t m) {
    return build_mask({parse_mask_string(spec, "test")}, n, m, m, 0.0);
}

// A random problem with n queries, m keys and the given "mask" JSON.
std::string problem_with_mask(std::size_t n, std::size_t m, const std::string& mask_json, const std::string& extra = "") {
    return fmt::format(R"({{"Q": {{"random": {{"shape": [{}, 4], "seed": 1}}}}, "K": {{"random": {{"shape": [{}, 4], "seed": 2}}}},
                         "V": {{"random": {{"shape": [{}, 3], "seed": 3}}}}, "mask": {} {}}})",
                       n, m, m, mask_json, extra);
}

// Weights are exactly 0 where the mask is -inf and each row with a visible key sums to 1.
void require_weight_invariants(const Trace& trace) {
    const Matrix& mask = step_values(trace, "mask");
    const Matrix& weights = step_values(trace, "weights");
    for (std::size_t i = 0; i < weights.rows(); ++i) {
        double sum = 0;
        bool any_visible = false;
        for (std::size_t j = 0; j < weights.cols(); ++j) {
            if (mask(i, j) == -inf) REQUIRE(weights(i, j) == 0.0);
            else any_visible = true;
            sum += weights(i, j);
        }
        if (any_visible) REQUIRE(sum == Approx(1.0).margin(1e-12));
    }
}

}  // namespace

TEST_CASE("causal masks: top-left and bottom-right alignment differ when n != m") {
    // 2 queries, 4 keys: top-left lets query 0 read key 0 only; bottom-right puts
    // the queries at the end of the keys, so query 0 reads keys 0..2.
    REQUIRE(visible(mask_of("causal", 2, 4)).data() == matrix({{1, 0, 0, 0}, {1, 1, 0, 0}}).data());
    REQUIRE(visible(mask_of("causal-upper-left", 2, 4)).data() == matrix({{1, 0, 0, 0}, {1, 1, 0, 0}}).data());
    REQUIRE(visible(mask_of("causal-bottom-right", 2, 4)).data() == matrix({{1, 1, 1, 0}, {1, 1, 1, 1}}).data());
    REQUIRE(visible(mask_of("causal-lower-right", 2, 4)).data() == matrix({{1, 1, 1, 0}, {1, 1, 1, 1}}).data());
    // Square: the two alignments agree.
    REQUIRE(mask_of("causal", 3, 3).data() == mask_of("causal-bottom-right", 3, 3).data());
}

TEST_CASE("causal mask with n != m leaves a note naming the alignment") {
    const Trace trace = run_json(problem_with_mask(2, 4, R"("causal")"));
    REQUIRE(trace.notes.size() == 1);
    REQUIRE_THAT(note_text(trace.notes[0]), Catch::Contains("top-left"));
    const Trace bottom = run_json(problem_with_mask(2, 4, R"("causal-bottom-right")"));
    REQUIRE_THAT(note_text(bottom.notes[0]), Catch::Contains("bottom-right"));
}

TEST_CASE("window masks count W keys including the query's own, bottom-right aligned") {
    REQUIRE(visible(mask_of("window:2", 4, 4)).data() == matrix({{1, 0, 0, 0}, {1, 1, 0, 0}, {0, 1, 1, 0}, {0, 0, 1, 1}}).data());
    // FlashAttention's window_size=(left 1, right 1): a band of 3.
    const Trace band = run_json(problem_with_mask(4, 4, R"({"window": {"left": 1, "right": 1}})"));
    REQUIRE(visible(step_values(band, "mask")).data() == matrix({{1, 1, 0, 0}, {1, 1, 1, 0}, {0, 1, 1, 1}, {0, 0, 1, 1}}).data());
    // With m > n the window sits at the end of the keys: query 0 is key position 2.
    REQUIRE(visible(mask_of("window:2", 2, 4)).data() == matrix({{0, 1, 1, 0}, {0, 0, 1, 1}}).data());
    require_weight_invariants(band);
}

TEST_CASE("padding masks: key_valid object and padding:1,1,0 string agree") {
    const Trace object = run_json(problem_with_mask(3, 3, R"({"key_valid": [1, 1, 0]})"));
    const Trace text = run_json(problem_with_mask(3, 3, R"("padding:1,1,0")"));
    REQUIRE(visible(step_values(object, "mask")).data() == matrix({{1, 1, 0}, {1, 1, 0}, {1, 1, 0}}).data());
    REQUIRE(step_values(object, "weights").data() == step_values(text, "weights").data());
    require_weight_invariants(object);
}

TEST_CASE("boolean masks: allowed (true = may read) and blocked (true = may not) are opposite conventions") {
    const std::string pattern = "[[true, false, false], [true, true, false], [true, true, true]]";
    const Trace allowed = run_json(problem_with_mask(3, 3, R"({"allowed": )" + pattern + "}"));
    const Trace causal = run_json(problem_with_mask(3, 3, R"("causal")"));
    REQUIRE(step_values(allowed, "weights").data() == step_values(causal, "weights").data());
    const std::string future = "[[false, true, true], [false, false, true], [false, false, false]]";
    const Trace blocked = run_json(problem_with_mask(3, 3, R"({"blocked": )" + future + "}"));
    REQUIRE(step_values(blocked, "weights").data() == step_values(causal, "weights").data());
    require_weight_invariants(blocked);
}

TEST_CASE("additive masks add finite biases and -inf blocks") {
    const Trace plain = run_json(problem_with_mask(2, 2, R"("none")"));
    const Trace biased = run_json(problem_with_mask(2, 2, R"({"additive": [[0, "-inf"], [1.5, 0]]})"));
    const Matrix& scaled = step_values(plain, "scaled");
    const Matrix& masked = step_values(biased, "masked");
    REQUIRE(masked(0, 0) == scaled(0, 0));
    REQUIRE(masked(0, 1) == -inf);
    REQUIRE(masked(1, 0) == scaled(1, 0) + 1.5);
    REQUIRE(step_values(biased, "weights")(0, 1) == 0.0);
    REQUIRE(step_values(biased, "weights")(0, 0) == 1.0);
}

TEST_CASE("a list of masks combines by adding: a key is visible only if every mask allows it") {
    const Trace both = run_json(problem_with_mask(3, 3, R"(["causal", {"key_valid": [0, 1, 1]}])", R"(, "empty_rows": "zero")"));
    REQUIRE(visible(step_values(both, "mask")).data() == matrix({{0, 0, 0}, {0, 1, 0}, {0, 1, 1}}).data());
    // Row 0 reads nothing: with the zero policy its weights and output are exactly 0.
    const Matrix& weights = step_values(both, "weights");
    REQUIRE(weights(0, 0) == 0.0);
    REQUIRE(weights(0, 1) == 0.0);
    REQUIRE(step_values(both, "out")(0, 0) == 0.0);
    REQUIRE(weights(1, 1) == 1.0);
}

TEST_CASE("mask none is the same as no mask") {
    const Trace none = run_json(problem_with_mask(3, 3, R"("none")"));
    for (double x : step_values(none, "mask").data()) REQUIRE(x == 0.0);
}

TEST_CASE("unknown mask names and bad window widths are refused") {
    REQUIRE_THROWS_WITH(parse_mask_string("casual", "--mask"), Catch::Contains("unknown mask 'casual'"));
    REQUIRE_THROWS_WITH(parse_mask_string("window:0", "--mask"), Catch::Contains("at least 1 key"));
    REQUIRE_THROWS_WITH(parse_mask_string("window:x", "--mask"), Catch::Contains("whole number"));
    // Issue 12: the string form was not capped like {"window": W}, and row − (W − 1) overflowed (UBSan).
    REQUIRE_THROWS_WITH(parse_mask_string("window:9223372036854775807", "--mask"), Catch::Contains("at most 1099511627776 keys"));
    REQUIRE_NOTHROW(parse_mask_string("window:1099511627776", "--mask"));
    REQUIRE_THROWS_WITH(parse_mask_string("padding:1,2", "--mask"), Catch::Contains("found '2'"));
}

// Slopes worked by hand from the rule in docs/PROBLEM.md#alibi (BLOOM's build_alibi_tensor
// gives the same: base 2^(−8/P) to the powers 1…P, then 2^(−4/P) to the odd powers).
TEST_CASE("alibi: true takes the paper's slopes, for a head count that is not a power of 2 too") {
    CHECK(alibi_slopes(1) == std::vector<double>{1.0 / 256});
    CHECK(alibi_slopes(4) == std::vector<double>{0.25, 1.0 / 16, 1.0 / 64, 1.0 / 256});
    CHECK(alibi_slopes(6) == std::vector<double>{0.25, 1.0 / 16, 1.0 / 64, 1.0 / 256, 0.5, 0.125});
    const auto twelve = alibi_slopes(12);
    REQUIRE(twelve.size() == 12);
    for (int i = 0; i < 8; ++i) CHECK(twelve[static_cast<std::size_t>(i)] == std::exp2(-(i + 1)));
    CHECK(twelve[8] == Approx(0.7071067811865476).epsilon(1e-15));
    CHECK(twelve[11] == Approx(0.08838834764831845).epsilon(1e-15));  // 2^(−3.5)
    const auto twenty = alibi_slopes(20);  // P = 16: 2^(−i/2), then 2^(−(2i − 1)/4)
    REQUIRE(twenty.size() == 20);
    CHECK(twenty[15] == 1.0 / 256);
    CHECK(twenty[16] == Approx(0.8408964152537145).epsilon(1e-15));  // 2^(−1/4)
    CHECK(twenty[19] == Approx(0.29730177875068026).epsilon(1e-15));  // 2^(−7/4)
    // Through the file: head 5 of 6 has the slope 1/8 at distance 2.
    const Problem p = parse_problem(R"({"heads": 6, "Q": {"random": {"shape": [3, 12], "seed": 1}}, "K": {"random": {"shape": [3, 12], "seed": 2}},
                                        "V": {"random": {"shape": [3, 6], "seed": 3}}, "mask": "causal", "alibi": true})",
                                    "six.json");
    CHECK(head_mask(p, 0, 5)(2, 0) == -0.25);
}
