// grad's fused backward (docs/COMMANDS.md#grad, fast) against the step-by-step backward, the
// judge (itself checked against finite differences in test_grad.cpp and torch.autograd's goldens).
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "attn_trace/errors.hpp"
#include "bench/grad_reference.hpp"
#include "stepwise_test_problems.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;
using namespace attn_trace::testing;

namespace {

// Every gradient step of `want` (the step-by-step backward) has its twin in `got`,
// equal within the tolerance; the fused one keeps no (n, m) step.
void require_same_gradients(const Trace& got, const Trace& want, Tolerance tolerance) {
    std::size_t compared = 0;
    for (const Step& step : want.steps) {
        const std::string name = step_name(step.name);
        if (name != "grad_q" && name != "grad_k" && name != "grad_v" && name.rfind("grad_W_", 0) != 0 && name.rfind("grad_b_", 0) != 0 && name != "grad_x" &&
            name != "grad_x_source")
            continue;
        const Step* twin = got.find(step.name, step.head, step.batch, std::nullopt, std::nullopt);
        INFO("step " << name << " head " << step.head.value_or(-1) << " batch " << step.batch.value_or(-1));
        REQUIRE(twin != nullptr);
        const Comparison c = compare_matrices(twin->values, step.values, tolerance);
        INFO("max error " << c.max_error << " at [" << c.worst_row << ", " << c.worst_col << "]");
        REQUIRE(c.passed());
        ++compared;
    }
    REQUIRE(compared >= 3);
    for (const Step& step : got.steps)  // O(n) per head: no (n, m) step
        for (const StepName big : {StepName::grad_weights, StepName::grad_masked, StepName::grad_scores, StepName::p, StepName::grad_p, StepName::grad_s})
            CHECK(step.name != big);
}

GradOptions fused(std::size_t block_q, std::size_t block_k, int threads) {
    GradOptions options;
    options.d_out = "random:5";
    options.fast = FastPathOptions{threads, block_q, block_k, ""};
    return options;
}

}  // namespace

TEST_CASE("the fused backward equals the step-by-step one: GQA, key-range masks, widths off the vector, tiles and threads", "[grad][fast]") {
    // n > m under causal-bottom-right leaves the first rows empty (zero policy: no gradient).
    for (const auto& [shape, mask] : {std::pair{ProblemShape{37, 53, 4, 2, 20, 12}, nlohmann::json("none")}, {ProblemShape{37, 53, 4, 2, 20, 12}, "causal"},
                                      {ProblemShape{53, 37, 4, 2, 20, 12}, "causal-bottom-right"},
                                      {ProblemShape{53, 37, 4, 2, 20, 12}, {{"window", {{"left", 5}, {"right", 3}}}}}}) {
        nlohmann::json json = random_qkv(shape, 11);
        json["mask"] = mask;
        const Problem p = parse_problem(json.dump(), "t.json");
        GradOptions untiled;
        untiled.d_out = "random:5";
        for (const Dtype dtype : {Dtype::f64, Dtype::f32}) {
            const Trace want = pipeline_grad(p, RunOptions{dtype, "cpu"}, untiled);
            // Bc = 8 with 2 threads: several key tiles, so both workers sum into dQ and own dK, dV tiles.
            for (const auto& [bq, bk, threads] : {std::tuple{16, 8, 1}, std::tuple{16, 8, 2}, std::tuple{7, 5, 2}, std::tuple{0, 0, 2}}) {
                INFO("mask " << mask.dump() << ", " << dtype_name(dtype) << ", Br " << bq << " Bc " << bk << ", " << threads << " threads");
                const Trace got = pipeline_grad(p, RunOptions{dtype, "cpu"}, fused(static_cast<std::size_t>(bq), static_cast<std::size_t>(bk), threads));
                require_same_gradients(got, want, dtype == Dtype::f64 ? tolerances::same_math_f64 : tolerances::same_math_f32);
                if (mask == "none") CHECK(trace_number(got, "tiles_skipped") == 0);
                if (threads == 2 && bk == 8) CHECK(trace_number(got, "workers") == 2);
            }
        }
    }
}

TEST_CASE("the fused backward's lse and delta are the tiled backward's, and causal tiles are skipped", "[grad][fast]") {
    nlohmann::json json = random_qkv({40, 40, 2, 1, 8, 8}, 3);
    json["mask"] = "causal";
    const Problem p = parse_problem(json.dump(), "t.json");
    GradOptions tiled;
    tiled.d_out = "random:5";
    tiled.tiled = TiledOptions{8, 8};
    const Trace want = pipeline_grad(p, {}, tiled);
    const Trace got = pipeline_grad(p, {}, fused(8, 8, 2));
    for (int h = 0; h < 2; ++h)
        for (const char* name : {"lse", "delta"}) {
            INFO(name << " head " << h);
            CHECK(compare_matrices(step_values(got, name, h), step_values(want, name, h), tolerances::same_math_f64).passed());
        }
    // 5 × 5 tiles per head, 10 above the diagonal: skipped, as the tiled backward skips them
    CHECK(trace_number(got, "tiles_skipped") == 20);
    CHECK(trace_number(got, "tiles_computed") == 30);
    CHECK(trace_number(got, "tiles_skipped") == trace_number(want, "tiles_skipped"));
}

TEST_CASE("the fused backward through projections, RoPE, cross-attention and W_O gives every input and weight gradient", "[grad][fast]") {
    const std::string projected = R"({"heads": 2, "rope": {"base": 100}, "mask": "causal",
        "X": {"random": {"shape": [9, 6], "seed": 1}}, "X_source": {"random": {"shape": [11, 6], "seed": 2}},
        "W_Q": {"random": {"shape": [6, 4], "seed": 3}}, "W_K": {"random": {"shape": [6, 4], "seed": 4}}, "W_V": {"random": {"shape": [6, 4], "seed": 5}},
        "b_Q": [0.1, -0.2, 0.3, 0.0], "W_O": {"random": {"shape": [4, 3], "seed": 6}}, "b_O": [1, 2, 3]})";
    const Problem p = parse_problem(projected, "t.json");
    GradOptions untiled;
    untiled.d_out = "random:5";
    const Trace got = pipeline_grad(p, {}, fused(4, 4, 2));
    require_same_gradients(got, pipeline_grad(p, {}, untiled), tolerances::same_math_f64);
    CHECK(got.find(StepName::grad_W_O, std::nullopt, std::nullopt, std::nullopt, std::nullopt) != nullptr);
    CHECK(got.find(StepName::grad_x_source, std::nullopt, std::nullopt, std::nullopt, std::nullopt) != nullptr);
}

TEST_CASE("what the fused backward does not take is refused with the reason", "[grad][fast][errors]") {
    nlohmann::json json = random_qkv({6, 6, 1, 1, 4, 4}, 1);
    const Problem plain = parse_problem(json.dump(), "t.json");
    CHECK_THROWS_WITH(pipeline_grad(plain, RunOptions{Dtype::f16, "cpu"}, fused(0, 0, 1)), Catch::Contains("f64 or f32 only"));
    GradOptions both = fused(0, 0, 1);
    both.tiled = TiledOptions{};
    CHECK_THROWS_WITH(pipeline_grad(plain, {}, both), Catch::Contains("choose one"));
    GradOptions row = fused(0, 0, 1);
    row.row = 1;
    CHECK_THROWS_WITH(pipeline_grad(plain, {}, row), Catch::Contains("row"));
    json["softcap"] = 5;
    CHECK_THROWS_AS(pipeline_grad(parse_problem(json.dump(), "t.json"), {}, fused(0, 0, 1)), BackendUnavailable);
    json.erase("softcap");
    json["mask"] = {{"key_valid", {1, 1, 0, 1, 1, 1}}};
    CHECK_THROWS_WITH(pipeline_grad(parse_problem(json.dump(), "t.json"), {}, fused(0, 0, 1)), Catch::Contains("key range"));
    json["mask"] = "none";
    json["dropout"] = {{"p", 0.1}, {"seed", 1}, {"mode", "train"}};
    CHECK_THROWS_WITH(pipeline_grad(parse_problem(json.dump(), "t.json"), {}, fused(0, 0, 1)), Catch::Contains("dropout"));
}

TEST_CASE("bench's judge of the fused backward, grad_q from the reference weights, is the step-by-step backward's grad_q", "[grad][fast]") {
    nlohmann::json json = random_qkv({12, 12, 4, 2, 5, 3}, 7);
    json["mask"] = "causal";
    json["d_out"] = random_matrix(12, 12, 9);
    const Problem p = parse_problem(json.dump(), "t.json");
    const Trace want = pipeline_grad(p, {}, GradOptions{});
    const Matrix got = reference_grad_q_rows(p, {}, p.d_out[0], QueryRows{3, 5});
    for (int h = 0; h < 4; ++h) {
        const Matrix& head = step_values(want, "grad_q", h);
        for (std::size_t r = 0; r < 5; ++r)
            for (std::size_t c = 0; c < 5; ++c) CHECK(got(r, static_cast<std::size_t>(h) * 5 + c) == Approx(head(3 + r, c)).margin(1e-13));
    }
}

TEST_CASE("the fused backward applies the empty-row policy as grad does", "[grad][fast][errors]") {
    nlohmann::json json = random_qkv({6, 4, 1, 1, 4, 4}, 1);
    json["mask"] = "causal-bottom-right";  // n > m: rows 0 and 1 read no key
    json.erase("empty_rows");                // the default policy: an error
    const Problem p = parse_problem(json.dump(), "t.json");
    CHECK_THROWS_AS(pipeline_grad(p, {}, GradOptions{}), InputError);
    CHECK_THROWS_WITH(pipeline_grad(p, {}, fused(0, 0, 1)), Catch::Contains("reads no key") || Catch::Contains("empty"));
}

TEST_CASE("under the nan empty-row policy the fused backward's NaN is where grad's is", "[grad][fast]") {
    // n > m under causal-bottom-right: rows 0 to 2 read no key. Their NaN weights (grad's A)
    // make their dQ rows NaN and, summed over every query row, all of dK and dV; the other
    // dQ rows stay finite (docs/PROBLEM.md#scale-softcap-empty-rows).
    nlohmann::json json = random_qkv({8, 5, 4, 2, 4, 3}, 2);
    json["mask"] = "causal-bottom-right";
    json["empty_rows"] = "nan";
    const Problem p = parse_problem(json.dump(), "t.json");
    GradOptions untiled;
    untiled.d_out = "random:5";
    for (const Dtype dtype : {Dtype::f64, Dtype::f32})
        for (const int threads : {1, 2}) {
            INFO(dtype_name(dtype) << ", " << threads << " threads");
            const Trace want = pipeline_grad(p, RunOptions{dtype, "cpu"}, untiled);
            const Trace got = pipeline_grad(p, RunOptions{dtype, "cpu"}, fused(2, 2, threads));
            require_same_gradients(got, want, dtype == Dtype::f64 ? tolerances::same_math_f64 : tolerances::same_math_f32);
            const Matrix& grad_q = step_values(got, "grad_q", 3);
            CHECK(std::isnan(grad_q(2, 0)));
            CHECK(std::isfinite(grad_q(3, 0)));
            CHECK(std::isnan(step_values(got, "grad_k", 1)(4, 2)));
            CHECK(std::isnan(step_values(got, "grad_v", 0)(0, 0)));
            CHECK(std::isnan(step_values(got, "delta", 0)(1, 0)));
            CHECK(std::isfinite(step_values(got, "delta", 0)(3, 0)));
        }
}
