// The fast path's inner functions (src/backend/cpu/panel_kernels-inl.hpp), compiled
// like the kernel: once per target by Highway's foreach_target.h, with the
// kernel's own options (tests/CMakeLists.txt), so that this is the code each
// target runs. Each check runs on every target this CPU supports, or only on the
// one ATTN_TRACE_KERNEL names (the per-target runs of CTest).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "test_panel_kernels.cpp"
#include <hwy/foreach_target.h>  // must come before highway.h

#include <hwy/highway.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <limits>

#include "backend/cpu/panel_kernels-inl.hpp"

HWY_BEFORE_NAMESPACE();
namespace attn_trace::HWY_NAMESPACE {

void check_exp2() {
    using S = panel::Simd<float>;
    double worst = 0;
    for (int step = 0; step <= 126 * 64; ++step) {
        // x from 0 down to −126 in steps of 1/64, plus an offset so f is not always a multiple of 1/64
        const float x = -static_cast<float>(step) / 64.0f - 0.0037f * static_cast<float>(step % 7);
        if (x < -126.0f) continue;
        const float got = panel::exp2_bounded(S::splat(x))[0];
        worst = std::max(worst, std::abs(static_cast<double>(got) / std::exp2(static_cast<double>(x)) - 1.0));
    }
    INFO("worst relative error " << worst);
    REQUIRE(worst < 3e-7);  // about 2.5 float ulps: the polynomial (1.8e-8) plus the roundings of its terms
    for (const float x : {-std::numeric_limits<float>::infinity(), -126.6f, -127.0f, -300.0f, -1e30f}) REQUIRE(panel::exp2_bounded(S::splat(x))[0] == 0.0f);
    REQUIRE(panel::exp2_bounded(S::splat(0.0f))[0] == 1.0f);
}

void check_exp2_double() {
    using S = panel::Simd<double>;
    double worst = 0;
    for (int step = 0; step <= 1022 * 16; ++step) {
        const double x = -static_cast<double>(step) / 16.0 - 0.00037 * static_cast<double>(step % 11);
        if (x < -1022.0) continue;
        worst = std::max(worst, std::abs(panel::exp2_bounded(S::splat(x))[0] / std::exp2(x) - 1.0));
    }
    for (const double x : {0.25, 1.0, 7.5, 16.0, 63.9}) worst = std::max(worst, std::abs(panel::exp2_bounded(S::splat(x))[0] / std::exp2(x) - 1.0));
    INFO("worst relative error " << worst);
    REQUIRE(worst < 5e-16);  // about two double ulps
    for (const double x : {-std::numeric_limits<double>::infinity(), -1022.6, -1023.0, -5000.0, -1e300}) REQUIRE(panel::exp2_bounded(S::splat(x))[0] == 0.0);
    REQUIRE(panel::exp2_bounded(S::splat(0.0))[0] == 1.0);
}

void check_micro_kernel() {
    constexpr std::size_t NR = panel::NR<float>, MR = panel::MR, depth = 5;
    float a[depth * MR], b[depth * NR], c[MR * NR], d[MR * NR];
    for (std::size_t i = 0; i < depth * MR; ++i) a[i] = static_cast<float>(i % 7) - 3.0f;
    for (std::size_t i = 0; i < depth * NR; ++i) b[i] = 0.25f * static_cast<float>(i % 5);
    for (std::size_t i = 0; i < MR * NR; ++i) c[i] = d[i] = 1.0f;
    panel::micro_kernel<float, true>(depth, a, b, c);
    panel::micro_kernel_rows<float, false>(4, depth, a, b, d);
    for (std::size_t r = 0; r < MR; ++r)
        for (std::size_t q = 0; q < NR; ++q) {
            float want = 0;
            for (std::size_t p = 0; p < depth; ++p) want += a[p * MR + r] * b[p * NR + q];
            REQUIRE(c[r * NR + q] == Approx(1.0f + want).margin(1e-5));
            REQUIRE(d[r * NR + q] == (r < 4 ? Approx(want).margin(1e-5) : Approx(1.0f)));  // rows past 4 untouched
        }
}

// Every row count 1 … MR, reading A in place from a row-major (rows, width) matrix in
// both of the kernel's ways: its rows as the r index (a_step 1, r_step width: the
// double kernel's keys) and its columns (a_step width, r_step 1: its values).
void check_micro_kernel_in_place() {
    constexpr std::size_t NR = panel::NR<double>, MR = panel::MR, width = 11, rows = 13;
    double matrix[rows * width], b[rows * NR], c[MR * NR];
    for (std::size_t i = 0; i < rows * width; ++i) matrix[i] = static_cast<double>(i % 9) - 4.0;
    for (std::size_t i = 0; i < rows * NR; ++i) b[i] = 0.5 * static_cast<double>(i % 7);
    for (std::size_t count = 1; count <= MR; ++count)
        for (const bool keys : {true, false}) {
            INFO(count << " rows, A's " << (keys ? "rows" : "columns"));
            const std::size_t depth = keys ? width : rows, a_step = keys ? 1 : width, r_step = keys ? width : 1;
            for (double& x : c) x = -7.0;
            panel::micro_kernel_rows<double, false>(count, depth, matrix, b, c, a_step, r_step);
            for (std::size_t r = 0; r < MR; ++r)
                for (std::size_t q = 0; q < NR; ++q) {
                    double want = 0;
                    for (std::size_t p = 0; p < depth; ++p) want += matrix[p * a_step + r * r_step] * b[p * NR + q];
                    REQUIRE(c[r * NR + q] == (r < count ? want : -7.0));  // small integers and halves: exact; rows past count untouched
                }
        }
}

}  // namespace attn_trace::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "backend/cpu/kernel_target.hpp"

namespace attn_trace {

HWY_EXPORT(check_exp2);
HWY_EXPORT(check_exp2_double);
HWY_EXPORT(check_micro_kernel);
HWY_EXPORT(check_micro_kernel_in_place);

namespace {

// Runs `check` on every target this CPU supports (the mock of Highway's target
// list set to one target at a time, then cleared), or as dispatched when
// ATTN_TRACE_KERNEL chose one.
template <typename Check>
void on_every_target(Check check) {
    const char* forced = std::getenv("ATTN_TRACE_KERNEL");
    if (forced && *forced) {
        settle_kernel_target();
        INFO("target " << hwy::TargetName(dispatched_kernel_target()));
        check();
        return;
    }
    for (const std::int64_t target : hwy::SupportedAndGeneratedTargets()) {
        hwy::SetSupportedTargetsForTest(target);
        INFO("target " << hwy::TargetName(target));
        REQUIRE(dispatched_kernel_target() == target);
        check();
    }
    hwy::SetSupportedTargetsForTest(0);
}

}  // namespace

TEST_CASE("the kernel's 2^x is within float rounding of exp2, and exactly 0 where it must be, on every target", "[fast]") {
    on_every_target([] { HWY_DYNAMIC_DISPATCH(check_exp2)(); });
}

TEST_CASE("the kernel's float64 2^x is within two ulps of exp2, and exactly 0 where it must be, on every target", "[fast]") {
    on_every_target([] { HWY_DYNAMIC_DISPATCH(check_exp2_double)(); });
}

TEST_CASE("the micro-kernel computes its MR × NR product, also with fewer rows, on every target", "[fast]") {
    on_every_target([] { HWY_DYNAMIC_DISPATCH(check_micro_kernel)(); });
}

TEST_CASE("the micro-kernel reads a matrix in place by its rows or its columns, for every row count, on every target", "[fast]") {
    on_every_target([] { HWY_DYNAMIC_DISPATCH(check_micro_kernel_in_place)(); });
}

}  // namespace attn_trace
#endif  // HWY_ONCE
