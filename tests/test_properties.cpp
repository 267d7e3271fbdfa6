// Properties over many problems (issue 12): a seeded generator draws problems
// across every feature — each input form (Q, K, V; X with projections, biases and
// W_O; cross-attention; batches with lengths), every mask form and lists of them,
// GQA and MQA, RoPE, softcap, ALiBi, each empty-row policy, f64 and f32 — and for
// each one checks what must hold whatever the numbers: every weights row sums to 1
// (or is exactly 0 or NaN as its policy says), a masked weight is exactly 0, and
// decode, tiled and the fast path equal the full trace. A refusal must be the same
// on every path. ATTN_TRACE_PROPERTY_PROBLEMS sets how many (10 000 by default).
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "attn_trace/errors.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/problem.hpp"
#include "attn_trace/random.hpp"
#include "attn_trace/tolerances.hpp"
#include "pipeline/stepwise_parts.hpp"
#include "stepwise_test_problems.hpp"

using namespace attn_trace;
using nlohmann::json;

namespace {

std::size_t property_problems() {
    const char* text = std::getenv("ATTN_TRACE_PROPERTY_PROBLEMS");
    return text ? std::strtoul(text, nullptr, 10) : 10000;
}

struct Drawn {
    json problem;
    Dtype dtype;
    bool decodable;  // decode needs m >= n and no X_source
};

// One problem of every kind a seed can draw; sizes stay small (n, m <= 8) so that
// ten thousand run in seconds.
Drawn draw_problem(std::uint64_t seed) {
    PortableRandom r(seed);
    const auto pick = [&r](std::size_t count) { return static_cast<std::size_t>(r.integer(0, static_cast<long>(count) - 1)); };
    const auto chance = [&r](double p) { return r.uniform() < p; };
    const int heads_choices[] = {1, 2, 4};
    const int heads = heads_choices[pick(3)];
    int kv_heads = heads;
    while (kv_heads > 1 && chance(0.5)) kv_heads /= 2;
    const std::size_t d_k = chance(0.5) ? 2 : 4, d_v = 1 + pick(4);
    const std::size_t form = pick(4);  // 0 Q/K/V, 1 X self-attention, 2 cross-attention, 3 a batch with lengths
    std::size_t n = 1 + pick(7), m = form == 0 || form == 2 ? 1 + pick(8) : n;
    json p;
    p["heads"] = heads;
    p["kv_heads"] = kv_heads;
    const auto matrix = [&](std::size_t rows, std::size_t cols) { return testing::random_matrix(rows, cols, seed * 16 + pick(1000)); };
    if (form == 0) {
        p["Q"] = matrix(n, heads * d_k);
        p["K"] = matrix(m, kv_heads * d_k);
        p["V"] = matrix(m, kv_heads * d_v);
    } else {
        const std::size_t d_model = 1 + pick(5), d_src = form == 2 ? 1 + pick(5) : d_model;
        if (form == 3) {
            const std::size_t batch = 2 + pick(2);
            p["X"] = {{"random", {{"shape", {batch, n, d_model}}, {"seed", seed}}}};
            json lengths = json::array();
            for (std::size_t b = 0; b < batch; ++b) lengths.push_back(1 + pick(m));
            p["lengths"] = lengths;
        } else {
            p["X"] = matrix(n, d_model);
        }
        if (form == 2) p["X_source"] = matrix(m, d_src);
        p["W_Q"] = matrix(d_model, heads * d_k);
        p["W_K"] = matrix(d_src, kv_heads * d_k);
        p["W_V"] = matrix(d_src, kv_heads * d_v);
        if (chance(0.3)) p["b_Q"] = {{"random", {{"shape", {heads * d_k}}, {"seed", seed + 7}}}};
        if (chance(0.3)) {
            p["W_O"] = matrix(heads * d_v, 1 + pick(4));
            if (chance(0.5)) p["b_O"] = {{"random", {{"shape", {p["W_O"]["random"]["shape"][1].get<std::size_t>()}}, {"seed", seed + 9}}}};
        }
    }
    const auto masks = testing::every_mask(n, m, seed);
    const std::size_t mask_count = pick(3);
    if (mask_count == 1) p["mask"] = masks[pick(masks.size())];
    // A list of two of the single forms (not "none", first, nor the list, last).
    const auto single = [&] { return masks[1 + pick(masks.size() - 2)]; };
    if (mask_count == 2) p["mask"] = json::array({single(), single()});
    if (chance(0.25)) p["rope"] = chance(0.5) ? json{{"base", 10000}} : json{{"base", 100}, {"style", "half"}};
    if (chance(0.2)) p["softcap"] = 1 + pick(5);
    if (chance(0.2)) p["alibi"] = true;
    if (chance(0.2)) p["scale"] = 0.3;
    const char* policies[] = {"error", "zero", "nan"};
    p["empty_rows"] = policies[pick(3)];
    return {p, chance(0.5) ? Dtype::f32 : Dtype::f64, form != 2 && m >= n};
}

// Every weights row sums to 1, or is all 0 (zero) or all NaN (nan) when it can
// read no key; a weight whose masked score is −∞ is exactly 0.
void check_weights(const Trace& full, double tolerance) {
    for (const Step& w : full.steps) {
        if (w.name != StepName::weights) continue;
        const Step* masked = full.find(StepName::masked, w.head, w.batch, std::nullopt, std::nullopt);
        REQUIRE(masked != nullptr);
        for (std::size_t i = 0; i < w.values.rows(); ++i) {
            double sum = 0;
            bool any_nan = false, any_visible = false;
            for (std::size_t j = 0; j < w.values.cols(); ++j) {
                const double x = w.values(i, j);
                any_nan |= std::isnan(x);
                const bool blocked = std::isinf((*masked).values(i, j));
                any_visible |= !blocked;
                if (blocked && !std::isnan(x)) REQUIRE(x == 0.0);
                sum += x;
            }
            INFO("weights head " << w.head.value_or(0) << " batch " << w.batch.value_or(0) << " row " << i);
            if (!any_visible) REQUIRE((any_nan || sum == 0.0));
            else REQUIRE(std::fabs(sum - 1.0) <= tolerance);
        }
    }
}

double number_of(const Trace& trace, const std::string& key) { return testing::trace_number(trace, key); }

}  // namespace

TEST_CASE("properties over many random problems: rows sum to 1, masked weights are 0, decode, tiled and the fast path equal the full trace") {
    const std::size_t count = property_problems();
    std::size_t traced = 0, refused = 0, decoded = 0;
    for (std::uint64_t seed = 0; seed < count; ++seed) {
        const Drawn d = draw_problem(seed);
        INFO("seed " << seed << " dtype " << dtype_name(d.dtype) << ": " << d.problem.dump());
        const Problem problem = parse_problem(d.problem.dump(), "property.json");
        const RunOptions run{d.dtype, "cpu"};
        const double tolerance = (d.dtype == Dtype::f32 ? tolerances::same_math_f32 : tolerances::same_math_f64).atol;
        const TiledOptions tiled{1 + seed % 3, 1 + seed / 3 % 3};
        Trace full;
        try {
            full = pipeline_full(problem, run);
        } catch (const InputError&) {
            // An empty row under "error": every path refuses it too.
            ++refused;
            REQUIRE_THROWS_AS(pipeline_tiled(problem, run, tiled), InputError);
            REQUIRE_THROWS_AS(pipeline_fast(problem, run, FastPathOptions{}), InputError);
            continue;
        }
        ++traced;
        check_weights(full, tolerance);
        REQUIRE(number_of(pipeline_tiled(problem, run, tiled), "max_abs_diff_vs_full") <= tolerance);
        REQUIRE(max_abs_diff_vs(pipeline_fast(problem, run, FastPathOptions{1, tiled.block_q, tiled.block_k, "property"}), full) <= tolerance);
        if (d.decodable) {
            // Decode adds causal-bottom-right, which may leave a row empty under "error".
            std::optional<Trace> decode;
            try {
                decode = pipeline_decode(problem, run, {});
            } catch (const InputError& e) {
                REQUIRE_THAT(e.what(), Catch::Contains("can read no key"));
            }
            if (decode) {
                REQUIRE(number_of(*decode, "max_abs_diff_vs_full") <= tolerance);
                ++decoded;
            }
        }
    }
    // The generator reaches every path: most problems trace, some are refused.
    CHECK(traced > count / 2);
    CHECK(decoded > count / 4);
    CHECK((count < 100 || refused > 0));
}
