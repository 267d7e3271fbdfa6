// explain in a half type ends a cell with its one rounding (docs/PROBLEM.md#dtype-half-precision):
// the f32 value, the value the type stores (the trace's), and the difference. The f32
// values here are computed independently, in float from the stored inputs and steps.
#include <cmath>
#include <regex>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "attn_trace/explain.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;
using namespace attn_trace::testing;

namespace {

// Every projection with a bias, W_O with b_O, a causal mask: no value of it is one f16 has.
const char* biased = R"({"X": [[0.1, 0.2, -0.3, 0.4], [0.5, -0.6, 0.7, 0.8], [0.9, 1.0, -1.1, 1.2]],
  "W_Q": [[0.11, 0.21], [0.31, -0.41], [0.51, 0.61], [-0.71, 0.81]],
  "W_K": [[0.12, -0.22], [0.32, 0.42], [-0.52, 0.62], [0.72, 0.82]],
  "W_V": [[0.13, 0.23], [-0.33, 0.43], [0.53, -0.63], [0.73, 0.83]],
  "b_Q": [0.013, -0.017], "b_K": [0.019, 0.023], "b_V": [-0.029, 0.031],
  "W_O": [[0.14, 0.24, -0.34, 0.44], [0.54, -0.64, 0.74, 0.84]], "b_O": [0.037, -0.041, 0.043, 0.047], "mask": "causal"})";

std::string explained(const std::string& json, const std::string& cell, Dtype dtype, int precision = 12) {
    return explain_problem(parse_problem(json, "test.json"), RunOptions{dtype, "cpu"}, parse_cell_spec(cell), ExplainOptions{0, 0, precision, Format::text});
}

// The closing line's numbers: "q_01 = X (f32) → Y (f16),  Y - X = D" (no difference when Y = X).
struct Rounding {
    std::string f32, stored, difference;
};

std::optional<Rounding> rounding_of(const std::string& text, const std::string& cell, Dtype dtype) {
    const std::regex line(cell + R"( = (\S+) \(f32\) → (\S+) \()" + dtype_name(dtype) + R"(\)(?:,  \S+ - \S+ = (\S+))?)");
    std::smatch match;
    if (!std::regex_search(text, match, line)) return std::nullopt;
    return Rounding{match[1], match[2], match[3]};
}

bool contains_rounding(const std::string& text) { return text.find("the one rounding to") != std::string::npos || text.find("(f32) →") != std::string::npos; }

double f16(double x) { return round_to(Dtype::f16, x); }
float f16f(double x) { return static_cast<float>(f16(x)); }

// The f32 value is the independent one, the stored value the trace's, and the difference
// their difference to 3 significant digits.
void check_rounding(const std::string& text, const std::string& cell, float f32_value, double stored_value) {
    INFO(text);
    const auto numbers = rounding_of(text, cell, Dtype::f16);
    REQUIRE(numbers);
    CHECK(std::stod(numbers->f32) == Approx(f32_value).margin(1e-12).epsilon(0));
    CHECK(std::stod(numbers->stored) == Approx(stored_value).margin(1e-12).epsilon(0));
    CHECK(f16(f32_value) == stored_value);  // the one rounding: the f32 value rounds to the stored one
    REQUIRE(f32_value != stored_value);
    CHECK(std::stod(numbers->difference) == Approx(stored_value - f32_value).epsilon(5e-3));
}

}  // namespace

TEST_CASE("in f16 a weight's cell ends with its rounding: exp over the f32 row sum, then stored", "[half][explain]") {
    const Trace trace = run_json(biased, Dtype::f16);
    const Matrix &exp = step_values(trace, "exp"), &row_sum = step_values(trace, "row_sum"), &weights = step_values(trace, "weights");
    // The stored exp over row_sum, which stays f32 (it is not rounded to f16).
    const float f32_value = static_cast<float>(exp(1, 0)) / static_cast<float>(row_sum(1, 0));
    check_rounding(explained(biased, "weights[1,0]", Dtype::f16), "weights_10", f32_value, weights(1, 0));
}

TEST_CASE("in f16 a score's cell ends with its rounding: the f32 dot product of the stored q and k", "[half][explain]") {
    const Trace trace = run_json(biased, Dtype::f16);
    const Matrix &q = step_values(trace, "q"), &k = step_values(trace, "k");
    float f32_value = 0;
    for (std::size_t t = 0; t < 2; ++t) f32_value += static_cast<float>(q(1, t)) * static_cast<float>(k(0, t));
    check_rounding(explained(biased, "scores[1,0]", Dtype::f16), "scores_10", f32_value, step_values(trace, "scores")(1, 0));
    // s is an f32 constant times the stored score.
    const float scaled = static_cast<float>(1 / std::sqrt(2.0)) * static_cast<float>(step_values(trace, "scores")(1, 0));
    check_rounding(explained(biased, "scaled[1,0]", Dtype::f16), "scaled_10", scaled, step_values(trace, "scaled")(1, 0));
}

TEST_CASE("in f16 a projection's cell ends with its rounding: the stored inputs' f32 dot product plus the bias", "[half][explain]") {
    const Problem problem = parse_problem(biased, "test.json");
    const Trace trace = run_json(biased, Dtype::f16);
    float q01 = 0;  // x_0 · W_Q[:,1] + b_Q[1], every input as f16 stores it
    for (std::size_t t = 0; t < 4; ++t) q01 += f16f(problem.X[0](0, t)) * f16f((*problem.W_Q)(t, 1));
    q01 += f16f((*problem.b_Q)[1]);
    check_rounding(explained(biased, "q[0,1]", Dtype::f16), "q_01", q01, step_values(trace, "q")(0, 1));
    // final: the stored concat (here one head's out) times W_O[:,2] plus b_O[2].
    const Matrix& out = step_values(trace, "out");
    float final12 = 0;
    for (std::size_t t = 0; t < 2; ++t) final12 += static_cast<float>(out(1, t)) * f16f((*problem.W_O)(t, 2));
    final12 += f16f((*problem.b_O)[2]);
    check_rounding(explained(biased, "final[1,2]", Dtype::f16), "final_12", final12, step_values(trace, "final")(1, 2));
}

TEST_CASE("in f16 out's cell ends with its rounding: the stored weights times the stored values, summed in f32", "[half][explain]") {
    const Trace trace = run_json(biased, Dtype::f16);
    const Matrix &a = step_values(trace, "weights"), &v = step_values(trace, "v");
    float f32_value = 0;
    for (std::size_t l = 0; l < 3; ++l) f32_value += static_cast<float>(a(2, l)) * static_cast<float>(v(l, 1));
    check_rounding(explained(biased, "out[2,1]", Dtype::f16), "out_21", f32_value, step_values(trace, "out")(2, 1));
    const Matrix &masked = step_values(trace, "masked"), &row_max = step_values(trace, "row_max");
    const float e = std::exp(static_cast<float>(masked(2, 0)) - static_cast<float>(row_max(2, 0)));  // z − max in f32, not stored
    check_rounding(explained(biased, "exp[2,0]", Dtype::f16), "exp_20", e, step_values(trace, "exp")(2, 0));
}

TEST_CASE("in f16 every rounded step of run ends its cell with the one rounding, row_sum, row_max, mask and hidden keys do not", "[half][explain]") {
    const Trace trace = run_json(biased, Dtype::f16);
    for (const char* cell : {"q[2,0]", "k[1,0]", "v[2,1]", "scores[2,1]", "scaled[2,1]", "masked[2,1]", "exp[2,0]", "weights[2,2]", "out[0,0]", "final[0,3]"}) {
        const std::string text = explained(biased, cell, Dtype::f16);
        INFO(text);
        const ExplainTarget target = parse_cell_spec(cell);
        const std::string name = fmt::format("{}_{}{}", step_name(target.step), target.row, *target.column);
        const auto numbers = rounding_of(text, name, Dtype::f16);
        REQUIRE(numbers);
        const double stored = step_values(trace, std::string(step_name(target.step)))(target.row, *target.column);
        CHECK(std::stod(numbers->stored) == Approx(stored).margin(1e-12).epsilon(0));
        CHECK(f16(std::stod(numbers->f32)) == stored);
    }
    // row_sum stays f32; row_max and the mask are not computed values; a hidden key's -inf and 0 are exact.
    for (const char* cell : {"row_sum[1,0]", "row_max[1,0]", "mask[0,1]", "masked[0,1]", "exp[0,1]", "weights[0,1]"})
        CHECK_FALSE(contains_rounding(explained(biased, cell, Dtype::f16)));
}

TEST_CASE("where the explanation's decimals would show the f32 and the stored value alike, both get 8 significant digits", "[half][explain]") {
    const Trace trace = run_json(biased, Dtype::f16);
    const Matrix &q = step_values(trace, "q"), &k = step_values(trace, "k");
    float f32_value = 0;
    for (std::size_t t = 0; t < 2; ++t) f32_value += static_cast<float>(q(1, t)) * static_cast<float>(k(0, t));
    const double stored = step_values(trace, "scores")(1, 0);
    REQUIRE(fmt::format("{:.4f}", f32_value) == fmt::format("{:.4f}", stored));  // the case: 0.1423 both
    const std::string text = explained(biased, "scores[1,0]", Dtype::f16, 4);
    const auto numbers = rounding_of(text, "scores_10", Dtype::f16);
    REQUIRE(numbers);
    CHECK(numbers->f32 == fmt::format("{:.8g}", f32_value));
    CHECK(numbers->stored == fmt::format("{:.8g}", stored));
    CHECK(numbers->f32 != numbers->stored);
}

TEST_CASE("a value f16 has is stored exactly, an overflow says so, and f64 and f32 explain no rounding", "[half][explain]") {
    const std::string damaged = damaged_keys + "}";
    const std::string exact = explained(damaged, "q[0,0]", Dtype::f16, 4);  // 1 × 0.5 + … = 0.5
    CHECK(exact.find("a value f16 has, so it is stored exactly") != std::string::npos);
    CHECK(exact.find("q_00 = 0.5 (f32) → 0.5 (f16)") != std::string::npos);
    const std::string overflow = explain_problem(load_problem(ATTN_TRACE_SOURCE_DIR "/tests/golden/half/overflow_f16.json"), RunOptions{Dtype::f16, "cpu"},
                                                 parse_cell_spec("scores[0,0]"), ExplainOptions{});
    CHECK(overflow.find("f16 stores it as -inf (an overflow)") != std::string::npos);
    const std::string bf16 = explained(biased, "weights[1,0]", Dtype::bf16);
    CHECK(rounding_of(bf16, "weights_10", Dtype::bf16));
    for (Dtype wide : {Dtype::f64, Dtype::f32})
        for (const char* cell : {"weights[1,0]", "scores[1,0]", "q[0,1]", "out[2,1]", "final[1,2]"}) CHECK_FALSE(contains_rounding(explained(biased, cell, wide)));
}
