// Exercises: every topic × several seeds is a problem that `check` passes, the
// same seed writes the same exercise, another seed another one.
#include <catch2/catch.hpp>

#include "attn_trace/check.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/exercise.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;

TEST_CASE("every topic's JSON passes check for several seeds") {
    for (const auto& topic : exercise_topics())
        for (std::uint64_t seed : {0, 1, 2, 7, 12345}) {
            INFO("topic " << topic << ", seed " << seed);
            const Problem problem = parse_problem(write_exercise(topic, seed, "json"), "exercise.json");
            REQUIRE_FALSE(problem.expect.empty());
            const CheckResult result = check_expectations(problem, CheckOptions{});
            CHECK(result.passed());
        }
}

TEST_CASE("kv-cache exercises check decode steps, tiled exercises tiled steps") {
    CHECK(pipeline_for(parse_problem(write_exercise("kv-cache", 3, "json"), "kv.json").expect) == "decode");
    CHECK(pipeline_for(parse_problem(write_exercise("tiled", 3, "json"), "tiled.json").expect) == "tiled");
    CHECK(pipeline_for(parse_problem(write_exercise("causal", 3, "json"), "causal.json").expect) == "run");
}

TEST_CASE("the same seed writes the same exercise; another seed another one") {
    for (const auto& topic : exercise_topics()) {
        INFO("topic " << topic);
        CHECK(write_exercise(topic, 5, "markdown") == write_exercise(topic, 5, "markdown"));
        CHECK(write_exercise(topic, 5, "json") != write_exercise(topic, 6, "json"));
    }
}

TEST_CASE("a seed's numbers are pinned, so every platform writes the same exercise") {
    // If the portable generator or the plan changes, this file changes: update it on purpose.
    const std::string json = write_exercise("scores", 1, "json");
    CHECK(json.find("\"title\": \"exercise scores (seed 1): Scores: Q Kᵀ and the scale\"") != std::string::npos);
    const Problem problem = parse_problem(json, "scores.json");
    CHECK(problem.d_k == 4);
    CHECK(problem.scale_factor() == 0.5);
    // Hand-friendly: every given number and every score is an integer, every scaled score a half.
    for (double x : problem.Q->data()) CHECK(x == std::floor(x));
    for (const auto& e : problem.expect)
        for (double x : e.data.data()) CHECK(x * (e.name == "scaled" ? 2 : 1) == std::floor(x * (e.name == "scaled" ? 2 : 1)));
}

TEST_CASE("the worked answer shows the steps and the arithmetic of a row, in Markdown and LaTeX") {
    const std::string md = write_exercise("causal", 2, "markdown");
    CHECK(md.find("## Answer") != std::string::npos);
    CHECK(md.find("### `mask`") != std::string::npos);
    CHECK(md.find("the softmax of row") != std::string::npos);
    CHECK(md.find("```math") != std::string::npos);  // explain's display maths, as GitHub renders it
    const std::string tex = write_exercise("softmax", 2, "latex");
    CHECK(tex.find("\\begin{enumerate}") != std::string::npos);
    CHECK(tex.find("\\begin{bmatrix}") != std::string::npos);
    CHECK(tex.find("\\frac{") != std::string::npos);
    CHECK(write_exercise("scale", 0, "markdown").find("Without the scale") != std::string::npos);
    CHECK(write_exercise("cost", 0, "markdown").find("```") != std::string::npos);
}

TEST_CASE("unknown topics and formats are input errors") {
    CHECK_THROWS_AS(write_exercise("attention", 0, "markdown"), InputError);
    CHECK_THROWS_AS(write_exercise("scores", 0, "csv"), InputError);
}
