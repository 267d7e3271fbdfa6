// decode's and tiled's weights put back together whole for the pictures
// (docs/COMMANDS.md#options-shared-by-run-decode-and-tiled): each equals run's
// weights of the same problem, decode's with the causal mask it implies.
#include <catch2/catch.hpp>

#include "attn_trace/whole_weights.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;
using namespace attn_trace::testing;

namespace {

const std::string gqa = R"({"Q": [[1, 0, 0.5, -1], [0, 1, 1, 0], [1, 1, -0.5, 2], [0.3, -2, 1, 1]],
  "K": [[1, 0], [0, 1], [1, 1], [-1, 0.5]], "V": [[1, 2], [3, 4], [5, 6], [7, 8]], "heads": 2, "kv_heads": 1)";

// The whole weights step of `head` equals run's to `tolerance`, and keeps run's labels.
void same_weights(const Trace& whole, const Trace& full, int head, double tolerance) {
    const Step* w = whole.find(StepName::weights, head, std::nullopt, std::nullopt, std::nullopt);
    const Step* f = full.find(StepName::weights, head, std::nullopt, std::nullopt, std::nullopt);
    REQUIRE(w != nullptr);
    REQUIRE(f != nullptr);
    REQUIRE(w->values.rows() == f->values.rows());
    REQUIRE(w->values.cols() == f->values.cols());
    for (std::size_t i = 0; i < f->values.rows(); ++i)
        for (std::size_t j = 0; j < f->values.cols(); ++j) CHECK(w->values(i, j) == Approx(f->values(i, j)).margin(tolerance));
    CHECK(w->row_labels == f->row_labels);
    CHECK(w->column_labels == f->column_labels);
}

}  // namespace

TEST_CASE("decode's weights rows stacked by t are run's causal weights") {
    const Problem problem = parse_problem(damaged_keys + "}", "damaged.json");
    Problem causal = problem;
    causal.masks = parse_mask_option("causal", problem.n, problem.m, "mask");
    const Trace full = pipeline_full(causal, RunOptions{});
    for (std::size_t prefill : {0, 2}) {
        DecodeOptions options;
        options.prefill = prefill;
        const auto whole = whole_weights(pipeline_decode(problem, RunOptions{}, options));
        REQUIRE(whole.has_value());
        REQUIRE(whole->steps.size() == 1);
        same_weights(*whole, full, 0, 0.0);
        // Above the diagonal the keys were not yet in the cache: exact zeros.
        CHECK(whole->steps[0].values(0, 2) == 0.0);
    }
    // GQA: a whole step per query head.
    const Problem g = parse_problem(gqa + "}", "gqa.json");
    Problem g_causal = g;
    g_causal.masks = parse_mask_option("causal", g.n, g.m, "mask");
    const auto whole = whole_weights(pipeline_decode(g, RunOptions{}, DecodeOptions{}));
    REQUIRE(whole->steps.size() == 2);
    for (int h : {0, 1}) same_weights(*whole, pipeline_full(g_causal, RunOptions{}), h, 0.0);
}

TEST_CASE("tiled's final weights exp(S − m) / ℓ from its tiles are run's weights") {
    for (const std::string mask : {"", R"(, "mask": "causal")"}) {
        const Problem problem = parse_problem(gqa + mask + "}", "gqa.json");
        const Trace full = pipeline_full(problem, RunOptions{});
        // Tiles that divide n and m, that do not (the last narrower), and a causal mask's skipped tiles.
        for (const auto& [bq, bk] : {std::pair<std::size_t, std::size_t>{2, 2}, {3, 3}, {1, 2}, {4, 4}}) {
            const Trace tiled = pipeline_tiled(problem, RunOptions{}, TiledOptions{bq, bk});
            const auto whole = whole_weights(tiled);
            REQUIRE(whole.has_value());
            REQUIRE(whole->steps.size() == 2);
            for (int h : {0, 1}) same_weights(*whole, full, h, 1e-15);
        }
    }
}

TEST_CASE("run's trace holds its weights whole: nothing to put together") {
    CHECK_FALSE(whole_weights(run_json(damaged_keys + "}")).has_value());
}
