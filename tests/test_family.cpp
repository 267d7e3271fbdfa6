// The rest of the attention family (docs/FAMILY.md#the-rest-of-the-attention-family):
// sparse patterns, MLA, dropout and the permutation experiment, checked against their
// defining relations and against the full computation (the PyTorch goldens are in
// tests/golden/).
#include <algorithm>
#include <cmath>
#include <set>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "attn_trace/cost.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/permutation.hpp"
#include "attn_trace/random.hpp"
#include "attn_trace/sparse_pattern.hpp"
#include "pipeline/stepwise_parts.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;
using namespace attn_trace::testing;

namespace {

double number_of(const Trace& trace, const std::string& key) {
    for (const auto& [name, value] : trace.numbers)
        if (name == key) return value;
    throw std::runtime_error("no number " + key);
}

// Q, K, V (n, heads·4) from the portable generator, with extra keys.
std::string random_qkv(std::size_t n, int heads, const std::string& extra) {
    return fmt::format(R"({{"heads": {}, "Q": {{"random": {{"shape": [{}, {}], "seed": 1}}}}, "K": {{"random": {{"shape": [{}, {}], "seed": 2}}}},
                         "V": {{"random": {{"shape": [{}, {}], "seed": 3}}}}{}}})",
                       heads, n, heads * 4, n, heads * 4, n, heads * 4, extra);
}

const std::string bigbird = R"({"block": 16, "window": {"left": 1, "right": 1}, "global": [0], "random": {"per_row": 2, "seed": 7}})";

}  // namespace

TEST_CASE("a sparse pattern is the union of its parts, intersected with causal", "[sparse]") {
    const Problem p = parse_problem(random_qkv(8, 1, R"(, "sparse": {"window": {"left": 1, "right": 0}, "global": [3], "causal": true})"), "t.json");
    const Matrix& mask = p.masks[0].sparse.block == 1 ? build_mask(p.masks, 8, 8, 8, 0.0) : Matrix();
    for (std::size_t i = 0; i < 8; ++i)
        for (std::size_t j = 0; j < 8; ++j) {
            const bool want = j <= i && (i - j <= 1 || i == 3 || j == 3);
            INFO("i " << i << " j " << j);
            CHECK(std::isfinite(mask(i, j)) == want);
        }
}

TEST_CASE("the weights of a sparse pattern are exactly 0 where it scores nothing and rows sum to 1", "[sparse]") {
    const Trace trace = run_json(random_qkv(64, 2, ", \"sparse\": " + std::string(R"({"block": 8, "window": 1, "global": [2], "random": {"per_row": 1, "seed": 4}})")));
    for (int h = 0; h < 2; ++h) {
        const Matrix& mask = step_values(trace, "mask", h);
        const Matrix& weights = step_values(trace, "weights", h);
        for (std::size_t i = 0; i < 64; ++i) {
            double sum = 0;
            for (std::size_t j = 0; j < 64; ++j) {
                if (std::isinf(mask(i, j))) CHECK(weights(i, j) == 0.0);
                sum += weights(i, j);
            }
            CHECK(sum == Approx(1.0).margin(1e-14));
        }
    }
}

TEST_CASE("reach counts the layers a window needs, and inf where the causal rule forbids", "[sparse]") {
    // A causal window of 2 (left 1): key j reaches query i ≥ j after i − j layers, never when j > i.
    const Trace trace = run_json(random_qkv(7, 1, R"(, "sparse": {"window": 2})"));
    const Matrix& reach = step_values(trace, "reach", 0);
    for (std::size_t i = 0; i < 7; ++i)
        for (std::size_t j = 0; j < 7; ++j) {
            INFO("i " << i << " j " << j);
            if (j > i) CHECK(std::isinf(reach(i, j)));
            else CHECK(reach(i, j) == std::max<double>(1.0, static_cast<double>(i - j)));
        }
    CHECK(number_of(trace, "reach_max") == 6);
    CHECK(number_of(trace, "scored_pairs") == 13);  // 7 diagonal + 6 below it
    CHECK(number_of(trace, "density") == Approx(13.0 / 49.0));
}

TEST_CASE("cost counts the same scored pairs as the trace's mask", "[sparse][cost]") {
    for (const std::string& spec : {std::string(R"({"window": {"left": 2, "right": 1}, "global": [0, 5]})"), bigbird,
                                   std::string(R"({"block": 3, "window": 2, "global": [1], "random": {"per_row": 2, "seed": 9}, "causal": true})")}) {
        INFO(spec);
        const Problem p = parse_problem(random_qkv(50, 1, ", \"sparse\": " + spec), "t.json");
        const Trace trace = pipeline_full(p, {});
        CostQuestion q;
        q.d_model = 4;
        const SparseCost cost = compute_sparse_cost(q, p.masks[0].sparse, {50});
        CHECK(static_cast<double>(cost.rows[0].scored_pairs) == number_of(trace, "scored_pairs"));
    }
}

TEST_CASE("a fixed window, global set and random count make the scored pairs grow linearly", "[sparse][cost]") {
    SparsePattern pattern;
    pattern.block = 64;
    pattern.has_window = true;
    pattern.window_left = pattern.window_right = 1;
    pattern.global = {0};
    pattern.has_random = true;
    pattern.per_row = 3;
    CostQuestion q;
    q.d_model = 768;
    q.heads = 12;
    const SparseCost cost = compute_sparse_cost(q, pattern, {4096, 8192, 16384});
    for (std::size_t r = 1; r < 3; ++r) {
        const double growth = static_cast<double>(cost.rows[r].scored_pairs) / static_cast<double>(cost.rows[r - 1].scored_pairs);
        CHECK(growth > 1.9);
        CHECK(growth < 2.1);  // the dense count grows 4×
    }
    CHECK(cost.rows[0].attention_multiply_adds == 2 * cost.rows[0].scored_pairs * 768);
}

TEST_CASE("sparse_touches is never false for a tile holding a visible pair", "[sparse]") {
    PortableRandom generator(11);
    for (int trial = 0; trial < 40; ++trial) {
        SparsePattern p;
        p.block = 1 + static_cast<std::size_t>(generator.integer(0, 4));
        p.has_window = generator.uniform() < 0.7;
        p.window_left = generator.integer(0, 2);
        p.window_right = generator.integer(0, 2);
        if (generator.uniform() < 0.5) p.global = {static_cast<std::size_t>(generator.integer(0, 3))};
        p.has_random = generator.uniform() < 0.5;
        p.per_row = static_cast<std::size_t>(generator.integer(0, 2));
        p.seed = static_cast<std::uint64_t>(trial);
        p.causal = generator.uniform() < 0.4;
        const std::size_t n = 24, m = 24;
        resolve_random(p, n, m);
        for (std::size_t i0 = 0; i0 < n; i0 += 5)
            for (std::size_t j0 = 0; j0 < m; j0 += 7) {
                const std::size_t i1 = std::min(n, i0 + 5), j1 = std::min(m, j0 + 7);
                bool any = false;
                for (std::size_t i = i0; i < i1; ++i)
                    for (std::size_t j = j0; j < j1; ++j) any = any || sparse_visible(p, i, j, n, m);
                if (any) CHECK(sparse_touches(p, i0, i1, j0, j1, n, m));
            }
    }
}

TEST_CASE("tiled and the fast path equal the full trace on sparse patterns and skip the empty tiles", "[sparse][tiled][fast]") {
    const Problem p = parse_problem(random_qkv(256, 2, ", \"sparse\": " + bigbird + R"(, "mask": "causal")"), "t.json");
    const Trace full = pipeline_full(p, {});
    const Trace tiled = pipeline_tiled(p, {}, TiledOptions{32, 32});
    CHECK(number_of(tiled, "max_abs_diff_vs_full") < 1e-13);
    CHECK(number_of(tiled, "tiles_skipped") > 0);
    for (Dtype dtype : {Dtype::f64, Dtype::f32}) {
        const Trace fast = pipeline_fast(p, {dtype, "cpu"}, FastPathOptions{.threads = 2, .block_q = 32, .block_k = 32, .reason = ""});
        CHECK(max_abs_diff_vs(fast, full) < (dtype == Dtype::f64 ? 1e-13 : 1e-5));
        // Causal alone would skip the 28 tiles above the diagonal per head; the pattern skips more.
        CHECK(number_of(fast, "tiles_skipped") > 2 * 28);
    }
}

TEST_CASE("sparse spec errors name the key", "[sparse][errors]") {
    const auto error_of = [](const std::string& sparse) {
        try {
            (void)parse_problem(random_qkv(8, 1, ", \"sparse\": " + sparse), "t.json");
        } catch (const InputError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK_THAT(error_of(R"({"block": 0})"), Catch::Contains("$.sparse.block") && Catch::Contains("at least 1"));
    CHECK_THAT(error_of(R"({"window": {"left": -1}})"), Catch::Contains("$.sparse.window.left"));
    CHECK_THAT(error_of(R"({"global": [8]})"), Catch::Contains("$.sparse.global[0]") && Catch::Contains("0 … 7"));
    CHECK_THAT(error_of(R"({"random": {"per_row": -2}})"), Catch::Contains("$.sparse.random.per_row"));
    CHECK_THAT(error_of(R"({"windw": 2})"), Catch::Contains("did you mean \"window\""));
}

TEST_CASE("dropout in train mode: dropped = weights ⊙ keep / (1 − p), keep 0 or 1 near 1 − p, the seed decides", "[dropout]") {
    const std::string train = R"(, "dropout": {"p": 0.3, "seed": 12, "mode": "train"})";
    const Trace trace = run_json(random_qkv(200, 2, train));
    for (int h = 0; h < 2; ++h) {
        const Matrix &weights = step_values(trace, "weights", h), &keep = step_values(trace, "keep", h), &dropped = step_values(trace, "dropped", h);
        for (std::size_t i = 0; i < keep.data().size(); ++i) {
            REQUIRE((keep.data()[i] == 0.0 || keep.data()[i] == 1.0));
            CHECK(dropped.data()[i] == weights.data()[i] * keep.data()[i] * (1 / 0.7));  // times the constant 1/(1 − p), as grad's dA_d is
        }
    }
    CHECK(number_of(trace, "kept_share") == Approx(0.7).margin(0.01));  // 80 000 draws: the standard error is 0.0016
    CHECK(step_values(run_json(random_qkv(200, 2, train)), "keep", 1).data() == step_values(trace, "keep", 1).data());
    const Trace other = run_json(random_qkv(200, 2, R"(, "dropout": {"p": 0.3, "seed": 13, "mode": "train"})"));
    CHECK(step_values(other, "keep", 0).data() != step_values(trace, "keep", 0).data());
    CHECK(step_values(trace, "keep", 1).data() != step_values(trace, "keep", 0).data());  // one stream over the heads
}

TEST_CASE("dropout in eval mode drops nothing and says why", "[dropout]") {
    const Trace eval = run_json(random_qkv(6, 1, R"(, "dropout": {"p": 0.5, "seed": 1})"));
    const Trace none = run_json(random_qkv(6, 1, ""));
    CHECK(eval.find(StepName::keep, 0, std::nullopt, std::nullopt, std::nullopt) == nullptr);
    CHECK(step_values(eval, "out").data() == step_values(none, "out").data());
    REQUIRE(eval.notes_of(NoteKind::dropout_eval).size() == 1);
    const Problem train = parse_problem(random_qkv(6, 1, R"(, "dropout": {"p": 0.5, "mode": "train"})"), "t.json");
    CHECK_THROWS_AS(pipeline_tiled(train, {}, {}), InputError);
    CHECK_THROWS_AS(pipeline_decode(train, {}, {}), InputError);
    CHECK_THROWS_AS(pipeline_fast(train, {}, {}), InputError);
    CHECK_THROWS_WITH(parse_problem(random_qkv(6, 1, R"(, "dropout": {"p": 1})"), "t.json"), Catch::Contains("$.dropout.p"));
    CHECK_THROWS_WITH(parse_problem(random_qkv(6, 1, R"(, "dropout": {"p": -0.1})"), "t.json"), Catch::Contains("0 ≤ p < 1"));
}

TEST_CASE("permuting the tokens of a position-free layer permutes its outputs", "[permute]") {
    const Problem p = parse_problem(damaged_keys + R"(, "W_O": [[1, 2], [3, 4]]})", "t.json");
    const Trace trace = permutation_trace(p, {}, {{2, 0, 1}, false});
    CHECK(number_of(trace, "max_abs_diff_equivariance") == 0.0);  // f64, here with no rounding apart
    CHECK(symmetry_breakers(p, false).empty());
    const Matrix& moved = step_values(trace, "permuted_out", 0);
    const Matrix& original = step_values(trace, "out", 0);
    CHECK(moved(0, 0) == original(2, 0));  // row i of P·out is row P[i] of out
    // The layer's output too (final, without a head).
    CHECK(trace.find(StepName::out_of_permuted, std::nullopt, std::nullopt, std::nullopt, std::nullopt) != nullptr);
}

TEST_CASE("a causal mask, RoPE at fixed positions and ALiBi break the symmetry, and the trace names them", "[permute]") {
    const auto diff = [](const std::string& extra, const std::string& breaker) {
        const Problem p = parse_problem(random_qkv(6, 2, extra), "t.json");
        const auto breakers = symmetry_breakers(p, false);
        CHECK(std::any_of(breakers.begin(), breakers.end(), [&](const std::string& b) { return b.find(breaker) != std::string::npos; }));
        return number_of(permutation_trace(p, {}, {{5, 3, 1, 0, 2, 4}, false}), "max_abs_diff_equivariance");
    };
    CHECK(diff(R"(, "mask": "causal")", "causal") > 1e-3);
    CHECK(diff(R"(, "rope": {"base": 10000})", "RoPE") > 1e-3);
    CHECK(diff(R"(, "alibi": true)", "ALiBi") > 1e-3);
    CHECK(diff(R"(, "sparse": {"window": 2})", "sparse") > 1e-3);
    // Explicit positions travel with their tokens: RoPE then keeps every score.
    const Problem travelling = parse_problem(random_qkv(6, 2, R"(, "rope": {"base": 10000}, "positions": [0, 1, 2, 3, 4, 5], "source_positions": [0, 1, 2, 3, 4, 5])"), "t.json");
    CHECK(symmetry_breakers(travelling, false).empty());
    CHECK(number_of(permutation_trace(travelling, {}, {{5, 3, 1, 0, 2, 4}, false}), "max_abs_diff_equivariance") < 1e-14);
}

TEST_CASE("permuting the source rows of cross-attention leaves the outputs where they are", "[permute]") {
    const Problem p = parse_problem(R"({"X": [[1, 0], [0, 1], [1, 1]], "X_source": [[1, 2], [0, 1], [2, 0], [1, 1]],
                                        "W_Q": [[1, 0], [0, 1]], "W_K": [[0.5, 1], [1, 0]], "W_V": [[1, 2], [3, 4]]})", "t.json");
    const Trace trace = permutation_trace(p, {}, {{3, 1, 0, 2}, true});
    CHECK(number_of(trace, "max_abs_diff_invariance") < 1e-15);
    CHECK_THROWS_WITH(permuted_rows(parse_problem(damaged_keys + "}", "t.json"), true), Catch::Contains("self-attention"));
}

TEST_CASE("a permutation is checked and drawn the same everywhere", "[permute]") {
    CHECK(parse_permutation("2,0,1", 3) == std::vector<std::size_t>{2, 0, 1});
    CHECK_THROWS_WITH(parse_permutation("2,0,0", 3), Catch::Contains("appears twice"));
    CHECK_THROWS_WITH(parse_permutation("2,0", 3), Catch::Contains("needs 3 indices, found 2"));
    CHECK_THROWS_WITH(parse_permutation("3,0,1", 3), Catch::Contains("past the last row"));
    CHECK_THROWS_WITH(parse_permutation("a,0,1", 3), Catch::Contains("found 'a'"));
    const auto drawn = random_permutation(10, 4);
    CHECK(drawn == random_permutation(10, 4));
    CHECK(std::set<std::size_t>(drawn.begin(), drawn.end()).size() == 10);
}

namespace {

// MLA: X (5, 6), 2 heads of d_content 3, d_c 4, d_cq 5, rope_dims 2, causal.
std::string mla_problem(const std::string& extra = "") {
    const auto random = [](std::size_t r, std::size_t c, int seed) { return fmt::format(R"({{"random": {{"shape": [{}, {}], "seed": {}}}}})", r, c, seed); };
    return fmt::format(R"({{"heads": 2, "X": {}, "mask": "causal", "rope": {{"base": 100}},
        "mla": {{"W_DKV": {}, "W_UK": {}, "W_UV": {}, "W_DQ": {}, "W_UQ": {}, "rope_dims": 2, "W_QR": {}, "W_KR": {}}}{}}})",
                       random(5, 6, 1), random(6, 4, 2), random(4, 6, 3), random(4, 6, 4), random(6, 5, 5), random(5, 6, 6), random(5, 4, 7),
                       random(6, 2, 8), extra);
}

}  // namespace

TEST_CASE("MLA's absorbed form equals the explicit one, and every pipeline equals the full trace", "[mla]") {
    const Problem p = parse_problem(mla_problem(), "t.json");
    CHECK(p.d_k == 5);  // d_content 3 + d_r 2
    CHECK(p.scale_factor() == 1 / std::sqrt(5.0));
    const Trace full = pipeline_full(p, {});
    CHECK(number_of(full, "max_abs_diff_absorbed") < 1e-13);
    CHECK(step_values(full, "c_kv").cols() == 4);
    CHECK(step_values(full, "k_rope").cols() == 2);
    CHECK(step_values(full, "q_latent", 1).cols() == 4);
    CHECK(number_of(pipeline_tiled(p, {}, TiledOptions{2, 2}), "max_abs_diff_vs_full") < 1e-13);
    CHECK(max_abs_diff_vs(pipeline_fast(p, {}, FastPathOptions{.threads = 1, .block_q = 0, .block_k = 0, .reason = ""}), full) < 1e-13);
    const Trace decode = pipeline_decode(p, {}, {});
    CHECK(number_of(decode, "max_abs_diff_vs_full") < 1e-13);
    CHECK(number_of(decode, "kv_cache_bytes_per_token") == (4 + 2) * 8);
    CHECK(decode.find(StepName::c_cache, std::nullopt, std::nullopt, 4, std::nullopt)->values.rows() == 5);
    CHECK(decode.find(StepName::k_cache, 0, std::nullopt, 0, std::nullopt) == nullptr);
}

TEST_CASE("cost --mla gives DeepSeek-V2's cache per token", "[mla][cost]") {
    CostQuestion q;
    q.n = 1;
    q.d_model = 128 * 128;
    q.heads = 128;
    const CacheComparison c = compare_kv_caches(q, 512, 64);
    CHECK(c.mha == 32768);
    CHECK(c.mla == 576);
    CHECK(c.mqa == 256);
}

TEST_CASE("MLA errors name both shapes and the key", "[mla][errors]") {
    const auto error_of = [](const std::string& json) {
        try {
            (void)parse_problem(json, "t.json");
        } catch (const InputError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    const std::string base = R"({"X": [[1, 0], [0, 1]], "W_Q": [[1, 0], [0, 1]], "mla": {"W_DKV": [[1], [0]], )";
    CHECK_THAT(error_of(base + R"("W_UK": [[1, 0], [0, 1]], "W_UV": [[1, 0]]}})"), Catch::Contains("W_DKV is (2, 1) and W_UK is (2, 2)"));
    CHECK_THAT(error_of(base + R"("W_UK": [[1, 0]], "W_UV": [[1, 0]], "rope_dims": 3}})"), Catch::Contains("rope_dims must be even"));
    CHECK_THAT(error_of(base + R"("W_UK": [[1, 0]], "W_UV": [[1, 0]], "rope_dims": 2, "W_QR": [[1, 0], [0, 1]]}})"), Catch::Contains("W_KR is missing"));
    CHECK_THAT(error_of(base + R"("W_UK": [[1, 0]], "W_UV": [[1, 0]]}, "W_K": [[1, 0], [0, 1]]})"), Catch::Contains("leave out W_K"));
}
