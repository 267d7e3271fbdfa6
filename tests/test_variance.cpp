// The √d_k experiment: near theory at small sample sizes, and reproducible.
#include <catch2/catch.hpp>

#include "attn_trace/errors.hpp"
#include "attn_trace/variance.hpp"

using namespace attn_trace;

namespace {

VarianceOptions small(std::vector<std::size_t> d_k, std::uint64_t seed = 0) {
    VarianceOptions o;
    o.d_k = std::move(d_k);
    o.samples = 4000;
    o.queries = 400;
    o.keys = 32;
    o.seed = seed;
    return o;
}

}  // namespace

TEST_CASE("Var(q·k) is about d_k, and about 1 after dividing by √d_k") {
    for (const auto& r : measure_variance(small({4, 64, 256}))) {
        INFO("d_k " << r.d_k);
        // 4000 samples: the variance's relative standard error is about √(2/4000)·√2 ≈ 3%; allow 12%.
        CHECK(r.variance_unscaled == Approx(static_cast<double>(r.d_k)).epsilon(0.12));
        CHECK(r.variance_scaled == Approx(1.0).epsilon(0.12));
    }
}

TEST_CASE("unscaled softmax saturates as d_k grows, scaled stays near 0.16 (the teaching text's figures)") {
    const auto rows = measure_variance(small({4, 1024}));
    CHECK(rows[0].largest_weight_unscaled == Approx(0.335).margin(0.03));
    CHECK(rows[1].largest_weight_unscaled == Approx(0.953).margin(0.03));
    for (const auto& r : rows) CHECK(r.largest_weight_scaled == Approx(0.16).margin(0.02));
    CHECK(rows[1].saturated_unscaled == Approx(0.73).margin(0.08));
    CHECK(rows[1].saturated_scaled == 0.0);
    CHECK(rows[1].gradient_unscaled == Approx(0.057).margin(0.02));
    CHECK(rows[1].gradient_scaled == Approx(0.24).margin(0.02));
}

TEST_CASE("the experiment is reproducible, and each d_k's row does not depend on the others", "[threads]") {
    const auto a = measure_variance(small({16, 64}, 3));
    const auto b = measure_variance(small({64}, 3));
    CHECK(a[1].variance_unscaled == b[0].variance_unscaled);
    CHECK(a[1].gradient_scaled == b[0].gradient_scaled);
    CHECK(measure_variance(small({16}, 4))[0].variance_unscaled != a[0].variance_unscaled);
}

TEST_CASE("the chart is an SVG with both lines, and bad sizes are input errors") {
    const VarianceOptions o = small({4, 16});
    const std::string svg = variance_svg(measure_variance(o), o);
    CHECK(svg.rfind("<svg", 0) == 0);
    CHECK(svg.find("</svg>") != std::string::npos);
    CHECK(svg.find("Var(q · k / √d_k)") != std::string::npos);
    CHECK_THROWS_AS(measure_variance(small({0})), InputError);
    CHECK_THROWS_AS(measure_variance(small({})), InputError);
    VarianceOptions huge = small({1 << 20});
    huge.samples = 1'000'000;
    CHECK_THROWS_AS(measure_variance(huge), InputError);
}
