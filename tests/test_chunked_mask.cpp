// The chunked local mask (docs/PROBLEM.md#chunked-llama-4s-local-attention): query i,
// at key position i' = i + (m − n), reads key j when j ≤ i' and ⌊j / C⌋ = ⌊i' / C⌋.
// The reference is independent of the mask code: the same rule written out here as an
// explicit `allowed` matrix, which takes the dense-mask path of every pipeline.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/explain.hpp"
#include "attn_trace/mask.hpp"
#include "attn_trace/tolerances.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;
using namespace attn_trace::testing;

namespace {

// The rule as a JSON `allowed` matrix: true where query i may read key j.
std::string allowed_json(std::size_t n, std::size_t m, long chunk) {
    std::string rows;
    for (std::size_t i = 0; i < n; ++i) {
        const long position = static_cast<long>(i + m) - static_cast<long>(n);
        std::string row;
        for (std::size_t j = 0; j < m; ++j) {
            const long key = static_cast<long>(j);
            const bool may_read = key <= position && key / chunk == position / chunk;  // positions are ≥ 0 here
            row += fmt::format("{}{}", j ? ", " : "", may_read ? "true" : "false");
        }
        rows += fmt::format("{}[{}]", i ? ", " : "", row);
    }
    return fmt::format(R"({{"allowed": [{}]}})", rows);
}

std::string problem(std::size_t n, std::size_t m, const std::string& mask, int heads = 1, int kv_heads = 1) {
    return fmt::format(R"({{"Q": {{"random": {{"shape": [{}, {}], "seed": 1}}}}, "K": {{"random": {{"shape": [{}, {}], "seed": 2}}}},
                         "V": {{"random": {{"shape": [{}, {}], "seed": 3}}}}, "heads": {}, "kv_heads": {}, "mask": {}}})",
                       n, 4 * heads, m, 4 * kv_heads, m, 3 * kv_heads, heads, kv_heads, mask);
}

Matrix visible(const std::string& spec, std::size_t n, std::size_t m) {
    const Matrix mask = build_mask({parse_mask_string(spec, "test")}, n, m, m, 0.0);
    Matrix out(n, m);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < m; ++j) out(i, j) = mask(i, j) == -inf ? 0.0 : 1.0;
    return out;
}

double number(const Trace& trace, const std::string& name) {
    for (const auto& [key, value] : trace.numbers)
        if (key == name) return value;
    throw std::runtime_error("no number " + name);
}

}  // namespace

TEST_CASE("chunked:C is causal inside chunks of C positions and blind across them", "[masks][chunked]") {
    CHECK(visible("chunked:2", 4, 4).data() == matrix({{1, 0, 0, 0}, {1, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 1, 1}}).data());
    // Bottom-right when m > n: query 0 is key position 3 (chunk 1), query 1 position 4 (chunk 2).
    CHECK(visible("chunked:2", 2, 5).data() == matrix({{0, 0, 1, 1, 0}, {0, 0, 0, 0, 1}}).data());
    // C = 1 reads only itself; C ≥ m is the causal mask.
    CHECK(visible("chunked:1", 3, 3).data() == matrix({{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}).data());
    CHECK(visible("chunked:8", 3, 3).data() == visible("causal", 3, 3).data());
}

TEST_CASE("chunked masks equal the rule written out as an allowed matrix, in run and grad", "[masks][chunked]") {
    for (const long chunk : {1L, 3L, 4L, 16L}) {
        INFO("C = " << chunk);
        const Trace chunked = run_json(problem(13, 13, fmt::format(R"("chunked:{}")", chunk)));
        const Trace reference = run_json(problem(13, 13, allowed_json(13, 13, chunk)));
        CHECK(step_values(chunked, "weights").data() == step_values(reference, "weights").data());
        CHECK(step_values(chunked, "out").data() == step_values(reference, "out").data());
        const Problem p = parse_problem(problem(13, 13, fmt::format(R"({{"chunked": {}}})", chunk)), "t.json");
        const Problem q = parse_problem(problem(13, 13, allowed_json(13, 13, chunk)), "t.json");
        const Trace grad = pipeline_grad(p, {}, GradOptions{"random:4", std::nullopt, std::nullopt, std::nullopt});
        const Trace grad_reference = pipeline_grad(q, {}, GradOptions{"random:4", std::nullopt, std::nullopt, std::nullopt});
        for (const char* step : {"grad_q", "grad_k", "grad_v"}) {
            INFO(step);
            CHECK(compare_matrices(step_values(grad, step), step_values(grad_reference, step), tolerances::same_math_f64).passed());
        }
    }
    // Cross-attention shape (m > n) and a list with a window.
    const Trace offset = run_json(problem(5, 11, R"("chunked:4")"));
    CHECK(step_values(offset, "weights").data() == step_values(run_json(problem(5, 11, allowed_json(5, 11, 4))), "weights").data());
    const Trace both = run_json(problem(9, 9, R"(["chunked:4", "window:2"])"));
    for (std::size_t i = 0; i < 9; ++i)
        for (std::size_t j = 0; j < 9; ++j) {
            const bool may_read = j <= i && j / 4 == i / 4 && i - j < 2;
            CHECK((step_values(both, "masked")(i, j) == -inf) == !may_read);
        }
}

TEST_CASE("chunked masks: the fast path, decode and tiled equal the full trace, tiles outside every chunk are skipped", "[masks][chunked][fast]") {
    const Problem p = parse_problem(problem(16, 16, R"("chunked:4")", 4, 2), "t.json");
    const Trace full = pipeline_full(p, {});
    const Trace fast = pipeline_fast(p, {}, FastPathOptions{2, 4, 4, "test"});
    const Trace fast_f32 = pipeline_fast(p, {Dtype::f32, "cpu"}, FastPathOptions{2, 4, 4, "test"});
    const Trace tiled = pipeline_tiled(p, {}, TiledOptions{4, 4});
    for (int h = 0; h < 4; ++h) {
        INFO("head " << h);
        CHECK(compare_matrices(step_values(fast, "out", h), step_values(full, "out", h), tolerances::same_math_f64).passed());
        CHECK(compare_matrices(step_values(fast_f32, "out", h), step_values(full, "out", h), tolerances::f32_vs_f64).passed());
        CHECK(compare_matrices(step_values(tiled, "out", h), step_values(full, "out", h), tolerances::same_math_f64).passed());
    }
    // 4 query blocks × 4 key tiles per head: only the diagonal tile of each block is in its chunk.
    CHECK(number(tiled, "tiles_skipped") == 4 * 12);
    CHECK(number(tiled, "max_abs_diff_vs_full") <= 1e-12);
    const Trace decode = pipeline_decode(p, {}, DecodeOptions{});
    CHECK(number(decode, "max_abs_diff_vs_full") <= 1e-12);
}

TEST_CASE("explain names the chunk rule for a mask cell", "[masks][chunked][explain]") {
    const Problem p = parse_problem(problem(6, 6, R"("chunked:3")"), "t.json");
    const std::string hidden = explain_problem(p, {}, parse_cell_spec("mask[4,2]"), {});
    CHECK_THAT(hidden, Catch::Contains("chunked:3: query 4 (position 4) is in chunk 1 (positions 3 to 5) and reads keys 3 to 4, so key 2 is hidden (-inf)"));
    const std::string shown = explain_problem(p, {}, parse_cell_spec("mask[4,3]"), {});
    CHECK_THAT(shown, Catch::Contains("so key 3 is visible (0)"));
}

TEST_CASE("chunked masks refuse a chunk that is not a whole number of at least 1", "[masks][chunked][errors]") {
    CHECK_THROWS_WITH(parse_mask_string("chunked:0", "--mask"), Catch::Contains("a chunk holds at least 1 position, found 0"));
    CHECK_THROWS_WITH(parse_mask_string("chunked:x", "--mask"), Catch::Contains("expected a whole number after ':', found 'x'"));
    CHECK_THROWS_WITH(parse_mask_string("chunked", "--mask"), Catch::Contains("chunked:C"));
    CHECK_THROWS_WITH(parse_problem(problem(3, 3, R"({"chunked": 0})"), "c.json"), Catch::Contains("c.json") && Catch::Contains("$.mask.chunked"));
    CHECK_THROWS_WITH(parse_problem(problem(3, 3, R"({"chunked": 1.5})"), "c.json"), Catch::Contains("$.mask.chunked"));
    CHECK_THROWS_WITH(parse_problem(problem(3, 3, R"({"chunked": "2"})"), "c.json"), Catch::Contains("$.mask.chunked"));
}
