// tiled (docs/COMMANDS.md#tiled): the online softmax against the full computation.
#include <catch2/catch.hpp>
#include <cmath>

#include "attn_trace/errors.hpp"
#include "attn_trace/tolerances.hpp"
#include "stepwise_test_problems.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;
using namespace attn_trace::testing;

namespace {

Trace tiled(const std::string& json, std::size_t block_q, std::size_t block_k, Dtype dtype = Dtype::f64) {
    return pipeline_tiled(parse_problem(json, "test.json"), RunOptions{dtype, "cpu"}, TiledOptions{block_q, block_k});
}

Trace full(const std::string& json, Dtype dtype = Dtype::f64) { return pipeline_full(parse_problem(json, "test.json"), RunOptions{dtype, "cpu"}); }

const Matrix& tile_step(const Trace& trace, const std::string& name, int qb, int kt, int head = 0) {
    const Step* step = trace.find(step_named(name), head, std::nullopt, std::nullopt, std::array<int, 2>{qb, kt});
    if (!step) throw std::runtime_error("no step " + name);
    return step->values;
}

bool any_nan(const Matrix& m) {
    return std::any_of(m.data().begin(), m.data().end(), [](double x) { return std::isnan(x); });
}

}  // namespace

TEST_CASE("tiled: damaged on arrival with two key tiles equals the full computation") {
    const std::string problem = damaged_keys + "}";
    const Trace trace = tiled(problem, 3, 2);
    REQUIRE(matches(step_values(trace, "out"), matrix({{0.248, 0.728}, {0.667, 0.333}, {1.007, 0.248}}), 5e-4));
    REQUIRE(trace_number(trace, "max_abs_diff_vs_full") <= 1e-15);
    REQUIRE(trace_number(trace, "scores_held") == 6);
    REQUIRE(trace_number(trace, "tiles_skipped") == 0);
    // Tile [0, 0] reads keys 0 and 1: damaged's m is s·0.75, ℓ = e^(s·(0.5 − 0.75)) + 1.
    const double s = 1 / std::sqrt(2.0);
    REQUIRE(tile_step(trace, "m", 0, 0)(0, 0) == Approx(s * 0.75).margin(1e-15));
    REQUIRE(tile_step(trace, "l", 0, 0)(0, 0) == Approx(std::exp(s * (0.5 - 0.75)) + 1).margin(1e-15));
    // Tile [0, 1] reads key 2 (score 3): the max rises, so ℓ and u shrink by e^(s·0.75 − s·3).
    REQUIRE(tile_step(trace, "rescale", 0, 1)(0, 0) == Approx(std::exp(s * 0.75 - s * 3)).margin(1e-15));
    REQUIRE(tile_step(trace, "m", 0, 1)(0, 0) == Approx(s * 3).margin(1e-15));
    REQUIRE(tile_step(trace, "u", 0, 1).cols() == 2);
    REQUIRE(tile_step(trace, "masked", 0, 1).cols() == 1);  // the last tile holds one key
}

TEST_CASE("tiled: a causal mask skips the tiles above the diagonal and counts them") {
    const std::string problem = damaged_keys + R"(, "mask": "causal"})";
    const Trace trace = tiled(problem, 1, 1);
    REQUIRE(trace_number(trace, "tiles_skipped") == 3);  // (0,1), (0,2), (1,2)
    REQUIRE(trace_number(trace, "tiles_computed") == 6);
    REQUIRE(trace.find(StepName::masked, 0, std::nullopt, std::nullopt, std::array<int, 2>{0, 1}) == nullptr);
    REQUIRE(matches(step_values(trace, "out"), matrix({{2, 0}, {1, 0}, {1.007, 0.248}}), 5e-4));
    REQUIRE(trace_number(tiled(problem, 2, 2), "tiles_skipped") == 1);
}

TEST_CASE("tiled: a tile whose keys are all blocked for a row keeps m = -inf and no NaN") {
    // Row 0 may read only key 3: tile [0, 0] (keys 0, 1) has nothing for it.
    nlohmann::json problem = random_qkv({2, 4, 1, 1, 2, 2}, 5);
    problem["mask"] = {{"allowed", {{false, false, false, true}, {true, true, true, true}}}};
    const Trace trace = tiled(problem.dump(), 2, 2);
    REQUIRE(tile_step(trace, "m", 0, 0)(0, 0) == -std::numeric_limits<double>::infinity());
    REQUIRE(tile_step(trace, "l", 0, 0)(0, 0) == 0.0);
    REQUIRE(tile_step(trace, "rescale", 0, 0)(0, 0) == 1.0);  // e^(−∞ − (−∞)) taken as 1: nothing to rescale
    for (const Step& step : trace.steps)
        if (step.name != StepName::masked) REQUIRE_FALSE(any_nan(step.values));
    REQUIRE(tile_step(trace, "rescale", 0, 1)(0, 0) == 0.0);  // the first key read: e^(−∞ − m) = 0
    require_same_outputs(trace, full(problem.dump()), tolerances::same_math_f64);
}

TEST_CASE("tiled equals the full computation: shapes, block sizes, every mask, GQA, f64 and f32") {
    std::uint64_t seed = 500;
    std::vector<ProblemShape> shapes = problem_shapes();
    shapes.push_back({7, 3, 2, 2, 3, 3});  // more queries than keys
    const std::vector<std::array<std::size_t, 2>> blocks = {{1, 1}, {2, 2}, {3, 2}, {2, 5}, {4, 4}, {16, 16}, {1, 7}};
    for (const auto& shape : shapes)
        for (const auto& mask : every_mask(shape.n, shape.m, seed))
            for (const auto& [block_q, block_k] : blocks) {
                nlohmann::json problem = random_qkv(shape, seed++);
                problem["mask"] = mask;
                CAPTURE(shape.n, shape.m, shape.heads, shape.kv_heads, mask.dump(), block_q, block_k);
                const Trace f64 = tiled(problem.dump(), block_q, block_k);
                require_same_outputs(f64, full(problem.dump()), tolerances::same_math_f64);
                REQUIRE(trace_number(f64, "max_abs_diff_vs_full") <= tolerances::same_math_f64.atol);
                require_same_outputs(tiled(problem.dump(), block_q, block_k, Dtype::f32), full(problem.dump()), tolerances::f32_vs_f64);
            }
}

TEST_CASE("tiled: batches with lengths, projections, W_O, RoPE, ALiBi and softcap") {
    for (int variant = 0; variant < 4; ++variant) {
        nlohmann::json problem;
        problem["X"] = {{"random", {{"shape", {3, 5, 8}}, {"seed", 30 + variant}}}};
        problem["W_Q"] = random_matrix(8, 8, 40);
        problem["W_K"] = random_matrix(8, 4, 41);
        problem["W_V"] = random_matrix(8, 4, 42);
        problem["b_K"] = std::vector<double>(4, 0.5);
        problem["W_O"] = random_matrix(8, 6, 43);
        problem["heads"] = 4;
        problem["kv_heads"] = 2;
        problem["mask"] = "causal";
        problem["lengths"] = {5, 3, 1};
        problem["empty_rows"] = "nan";
        if (variant == 1) problem["rope"] = {{"angles_deg", {30}}};
        if (variant == 2) problem["alibi"] = true;
        if (variant == 3) problem["softcap"] = 2.0;
        CAPTURE(variant);
        require_same_outputs(tiled(problem.dump(), 2, 3), full(problem.dump()), tolerances::same_math_f64);
    }
}

TEST_CASE("tiled: fully masked rows follow the empty-row policy") {
    nlohmann::json problem = random_qkv({3, 4, 1, 1, 2, 2}, 8);
    problem["mask"] = {{"blocked", {{true, true, true, true}, {false, true, false, true}, {true, true, true, false}}}};
    problem["empty_rows"] = "nan";
    const Trace nan_trace = tiled(problem.dump(), 2, 2);
    REQUIRE(std::isnan(step_values(nan_trace, "out")(0, 1)));
    require_same_outputs(nan_trace, full(problem.dump()), tolerances::same_math_f64);
    problem["empty_rows"] = "zero";
    REQUIRE(step_values(tiled(problem.dump(), 2, 2), "out")(0, 0) == 0.0);
    problem["empty_rows"] = "error";
    REQUIRE_THROWS_AS(tiled(problem.dump(), 2, 2), InputError);
}

TEST_CASE("tiled: block sizes of 0 are input errors") {
    const std::string problem = damaged_keys + "}";
    REQUIRE_THROWS_WITH(tiled(problem, 0, 2), Catch::Contains("block_q 0"));
    REQUIRE_THROWS_WITH(tiled(problem, 2, 0), Catch::Contains("block_k 0"));
}
