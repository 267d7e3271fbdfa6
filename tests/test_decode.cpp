// decode (docs/COMMANDS.md#decode) against the full causal computation and the seed's
// worked example.
#include <catch2/catch.hpp>
#include <cmath>
#include <tuple>

#include "attn_trace/errors.hpp"
#include "attn_trace/tolerances.hpp"
#include "stepwise_test_problems.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;
using namespace attn_trace::testing;

namespace {

const std::string damaged = damaged_keys + "}";

Trace decode(const std::string& json, DecodeOptions options = {}, Dtype dtype = Dtype::f64) {
    return pipeline_decode(parse_problem(json, "test.json"), RunOptions{dtype, "cpu"}, options);
}

// The full computation decode must equal: the same problem with causal-bottom-right added.
Trace full_causal(nlohmann::json problem, Dtype dtype) {
    nlohmann::json masks = nlohmann::json::array();
    if (problem.contains("mask")) masks = problem["mask"].is_array() ? problem["mask"] : nlohmann::json::array({problem["mask"]});
    masks.push_back("causal-bottom-right");
    problem["mask"] = masks;
    return pipeline_full(parse_problem(problem.dump(), "test.json"), RunOptions{dtype, "cpu"});
}

const Matrix& decode_step(const Trace& trace, const std::string& name, int t, int head = 0) {
    const Step* step = trace.find(step_named(name), head, std::nullopt, t, std::nullopt);
    if (!step) throw std::runtime_error("no step " + name + " at t " + std::to_string(t));
    return step->values;
}

}  // namespace

TEST_CASE("decode: the causal weights and outputs of damaged on arrival, one step at a time") {
    const Trace trace = decode(damaged);
    REQUIRE(matches(decode_step(trace, "weights", 0), matrix({{1}}), 1e-15));
    REQUIRE(matches(decode_step(trace, "weights", 1), matrix({{0.5, 0.5}}), 1e-15));
    REQUIRE(matches(decode_step(trace, "weights", 2), matrix({{0.503, 0.248, 0.248}}), 5e-4));
    REQUIRE(matches(decode_step(trace, "out", 0), matrix({{2, 0}}), 1e-15));
    REQUIRE(matches(decode_step(trace, "out", 1), matrix({{1, 0}}), 1e-15));
    REQUIRE(matches(decode_step(trace, "out", 2), matrix({{1.007, 0.248}}), 5e-4));
    REQUIRE(matches(step_values(trace, "out"), matrix({{2, 0}, {1, 0}, {1.007, 0.248}}), 5e-4));
    REQUIRE(trace_number(trace, "max_abs_diff_vs_full") == 0.0);
}

TEST_CASE("decode: the cache grows by one row per step, steps carry t") {
    const Trace trace = decode(damaged);
    for (int t = 0; t < 3; ++t) {
        const std::size_t length = static_cast<std::size_t>(t) + 1;
        REQUIRE(decode_step(trace, "k_cache", t).rows() == length);
        REQUIRE(decode_step(trace, "v_cache", t).cols() == 2);
        REQUIRE(decode_step(trace, "masked", t).cols() == length);
        REQUIRE(decode_step(trace, "weights", t).rows() == 1);
        REQUIRE(decode_step(trace, "out", t).cols() == 2);
    }
    // The cache after step 2 holds k_0, k_1, k_2: the rows of K.
    REQUIRE(decode_step(trace, "k_cache", 2).data() == matrix({{1, 0}, {0, 0.5}, {0, 2}}).data());
    REQUIRE(trace.command == "decode");
    REQUIRE(step_values(trace, "out").rows() == 3);  // the stacked outputs carry no t
}

TEST_CASE("decode: prefill is one causal block with t = P-1, then one query per step") {
    DecodeOptions options;
    options.prefill = 2;
    const Trace trace = decode(damaged, options);
    REQUIRE(decode_step(trace, "weights", 1).rows() == 2);
    REQUIRE(matches(decode_step(trace, "weights", 1), matrix({{1, 0}, {0.5, 0.5}}), 1e-15));
    REQUIRE(trace.find(StepName::weights, 0, std::nullopt, 0, std::nullopt) == nullptr);
    REQUIRE(decode_step(trace, "weights", 2).cols() == 3);
    REQUIRE(trace_number(trace, "max_abs_diff_vs_full") == 0.0);
    options.prefill = 3;
    REQUIRE(trace_number(decode(damaged, options), "max_abs_diff_vs_full") == 0.0);
}

TEST_CASE("decode equals the full causal computation: shapes, masks, prefill, GQA, f64 and f32") {
    std::uint64_t seed = 100;
    for (const auto& shape : problem_shapes()) {
        if (shape.m < shape.n) continue;
        for (const auto& mask : every_mask(shape.n, shape.m, seed)) {
            for (std::size_t prefill : {std::size_t{0}, std::size_t{1}, shape.n / 2, shape.n}) {
                nlohmann::json problem = random_qkv(shape, seed++);
                problem["mask"] = mask;
                CAPTURE(shape.n, shape.m, shape.heads, shape.kv_heads, mask.dump(), prefill);
                DecodeOptions options;
                options.prefill = prefill;
                const Trace f64 = decode(problem.dump(), options);
                require_same_outputs(f64, full_causal(problem, Dtype::f64), tolerances::same_math_f64);
                REQUIRE(trace_number(f64, "max_abs_diff_vs_full") <= tolerances::same_math_f64.atol);
                const Trace f32 = decode(problem.dump(), options, Dtype::f32);
                require_same_outputs(f32, full_causal(problem, Dtype::f64), tolerances::f32_vs_f64);
            }
        }
    }
}

TEST_CASE("decode: batches with lengths, projections, biases, W_O, RoPE, ALiBi and softcap") {
    for (int variant = 0; variant < 4; ++variant) {
        nlohmann::json problem;
        problem["X"] = {{"random", {{"shape", {3, 5, 8}}, {"seed", 7 + variant}}}};
        problem["W_Q"] = random_matrix(8, 8, 20);
        problem["W_K"] = random_matrix(8, 4, 21);
        problem["W_V"] = random_matrix(8, 4, 22);
        problem["b_Q"] = std::vector<double>(8, 0.25);
        problem["W_O"] = random_matrix(8, 6, 23);
        problem["b_O"] = std::vector<double>(6, -0.5);
        problem["heads"] = 4;
        problem["kv_heads"] = 2;
        problem["lengths"] = {5, 3, 1};
        problem["empty_rows"] = "nan";
        if (variant == 1) problem["rope"] = {{"base", 100}};
        if (variant == 2) problem["alibi"] = true;
        if (variant == 3) problem["softcap"] = 1.5;
        CAPTURE(variant);
        const Trace trace = decode(problem.dump());
        require_same_outputs(trace, full_causal(problem, Dtype::f64), tolerances::same_math_f64);
        REQUIRE(trace.find(StepName::final, std::nullopt, 2, std::nullopt, std::nullopt) != nullptr);
        REQUIRE(trace.find(StepName::k_cache, 1, 2, 4, std::nullopt) != nullptr);  // KV head 1 of sequence 2
        REQUIRE(trace.find(StepName::k_cache, 2, 0, 4, std::nullopt) == nullptr);  // only 2 KV heads
    }
}

TEST_CASE("decode: fully masked rows follow the empty-row policy") {
    nlohmann::json problem = random_qkv({4, 4, 1, 1, 2, 2}, 3);
    problem["mask"] = {{"key_valid", {0, 1, 1, 1}}};
    problem["empty_rows"] = "nan";
    const Trace nan_trace = decode(problem.dump());
    REQUIRE(std::isnan(decode_step(nan_trace, "out", 0)(0, 0)));
    require_same_outputs(nan_trace, full_causal(problem, Dtype::f64), tolerances::same_math_f64);
    problem["empty_rows"] = "zero";
    REQUIRE(decode_step(decode(problem.dump()), "out", 0)(0, 1) == 0.0);
    problem["empty_rows"] = "error";
    REQUIRE_THROWS_AS(decode(problem.dump()), InputError);
}

TEST_CASE("decode: cache bytes per token, extrapolated, and the saving of GQA") {
    // 32 layers, 8 KV heads of d = 128, 2 bytes, 8192 tokens: 1 GiB.
    nlohmann::json problem = random_qkv({2, 2, 32, 8, 128, 128}, 1);
    DecodeOptions options;
    options.layers = 32;
    options.bytes = 2;
    options.tokens = 8192;
    const Trace trace = decode(problem.dump(), options);
    REQUIRE(trace_number(trace, "kv_cache_bytes_per_token") == 2.0 * 32 * 8 * 128 * 2);
    REQUIRE(trace_number(trace, "kv_cache_bytes_total") == 1024.0 * 1024 * 1024);
    REQUIRE(trace_number(trace, "kv_cache_bytes_per_token_without_sharing") == 4 * trace_number(trace, "kv_cache_bytes_per_token"));
    // Defaults: one layer, 8 bytes in f64 and 4 in f32, m tokens.
    const Trace small = decode(damaged);
    REQUIRE(trace_number(small, "kv_cache_elements_per_token") == 4);
    REQUIRE(trace_number(small, "kv_cache_bytes_total") == 4 * 8 * 3);
    REQUIRE(trace_number(decode(damaged, {}, Dtype::f32), "kv_cache_bytes_per_token") == 16);
}

TEST_CASE("decode: problems it cannot decode are input errors") {
    DecodeOptions too_long;
    too_long.prefill = 4;
    REQUIRE_THROWS_WITH(decode(damaged, too_long), Catch::Contains("prefill 4") && Catch::Contains("n = 3"));
    REQUIRE_THROWS_AS(decode(random_qkv({5, 3, 1, 1, 2, 2}, 1).dump()), InputError);  // fewer keys than queries
    nlohmann::json cross = nlohmann::json::parse(damaged);
    cross["X_source"] = random_matrix(4, 4, 9);
    REQUIRE_THROWS_WITH(decode(cross.dump()), Catch::Contains("X_source"));
}

// The rolling cache (docs/COMMANDS.md#the-rolling-cache-of-a-sliding-window). With window:3
// the cache holds at most 3 keys, the oldest dropped as each new one arrives, and decode still equals the full pass.
TEST_CASE("decode: a sliding window keeps a rolling cache of at most W keys") {
    nlohmann::json problem = random_qkv(ProblemShape{6, 6, 1, 1, 4, 2}, 7);
    problem["mask"] = "window:3";
    const Trace trace = decode(problem.dump());
    REQUIRE(trace_number(trace, "max_abs_diff_vs_full") <= tolerances::same_math_f64.atol);
    for (int t = 0; t < 6; ++t) {
        CAPTURE(t);
        const Step* k = trace.find(StepName::k_cache, 0, std::nullopt, t, std::nullopt);
        REQUIRE(k);
        const std::size_t held = std::min<std::size_t>(static_cast<std::size_t>(t) + 1, 3);
        CHECK(k->values.rows() == held);
        CHECK(decode_step(trace, "weights", t).cols() == held);
        REQUIRE(k->evicted);
        CHECK(*k->evicted == (t >= 3 ? std::vector<std::size_t>{static_cast<std::size_t>(t) - 3} : std::vector<std::size_t>{}));
    }
    CHECK(trace_number(trace, "kv_cache_tokens") == 3);
    // A prefill of 5 reads its 5 keys, then keeps the last 3: keys 0 and 1 go at once.
    DecodeOptions prefill;
    prefill.prefill = 5;
    const Trace block = decode(problem.dump(), prefill);
    const Step* k = block.find(StepName::k_cache, 0, std::nullopt, 4, std::nullopt);
    REQUIRE(k);
    CHECK(k->values.rows() == 3);
    CHECK(*k->evicted == std::vector<std::size_t>{0, 1});
    CHECK(decode_step(block, "weights", 4).cols() == 5);
    CHECK(*block.find(StepName::k_cache, 0, std::nullopt, 5, std::nullopt)->evicted == std::vector<std::size_t>{2});
    // Without a window nothing is evicted and no step says so.
    problem["mask"] = "causal";
    CHECK_FALSE(decode(problem.dump()).find(StepName::k_cache, 0, std::nullopt, 5, std::nullopt)->evicted);
}

// Dynamic NTK (docs/PROBLEM.md#rope-scaling-partial-rotary): within the original context
// (here 3 positions) each step equals the full pass over the tokens so far; past it the
// cached keys keep the angles they were appended with, so decode and the full pass part.
// tests/models/llama_dynamic/problem_decode.json checks the steps against transformers' cache.
TEST_CASE("decode: dynamic RoPE turns each token with the base of the length so far") {
    nlohmann::json problem;
    for (const auto& [key, cols, seed] : {std::tuple{"Q", 4, 1.0}, std::tuple{"K", 4, 2.0}, std::tuple{"V", 2, 3.0}}) {
        std::vector<std::vector<double>> rows(6, std::vector<double>(static_cast<std::size_t>(cols)));
        for (std::size_t i = 0; i < 6; ++i)
            for (std::size_t j = 0; j < rows[i].size(); ++j) rows[i][j] = std::sin(seed * 3.7 + static_cast<double>(i) * 1.3 + static_cast<double>(j) * 0.7);
        problem[key] = rows;
    }
    problem["rope"] = {{"scaling", {{"type", "dynamic"}, {"factor", 4}, {"original_max_position_embeddings", 3}}}};
    const Trace trace = decode(problem.dump());
    CHECK(trace_number(trace, "max_abs_diff_vs_full") > 1e-3);
    REQUIRE(trace.notes_of(NoteKind::dynamic_rope_decode).size() == 1);
    for (int t = 0; t < 6; ++t) {
        nlohmann::json so_far = problem;
        for (const char* key : {"Q", "K", "V"}) so_far[key] = nlohmann::json(std::vector<nlohmann::json>(problem[key].begin(), problem[key].begin() + t + 1));
        so_far["mask"] = "causal";
        const Trace full = pipeline_full(parse_problem(so_far.dump(), "test.json"), RunOptions{});
        const Matrix& last = step_values(full, "out", 0);
        const Matrix& row = decode_step(trace, "out", t);
        CAPTURE(t);
        const bool same = std::abs(row(0, 0) - last(static_cast<std::size_t>(t), 0)) + std::abs(row(0, 1) - last(static_cast<std::size_t>(t), 1)) < 1e-12;
        // Up to 3 tokens no base changes; from 4 on, the step's own query and key see the new base but the cached keys do not.
        CHECK(same == (t < 3));
    }
}
