// The compute roof of bench's roofline (docs/PERFORMANCE.md#the-roofline): fused multiply-adds
// per second on the widest vectors the fast path runs, on `threads` threads at once.
// Compiled once per target like fast_attention.cpp, with the same panel::Simd vector type,
// so AVX-512 is measured on 16-float vectors (an 8-float loop, as a -mavx2 build would
// have it, reached 235 GFLOP/s on a Xeon where 16-float vectors reached 390–463), and
// ATTN_TRACE_KERNEL lowers it with the kernels. Twelve independent accumulators per
// thread: more than latency × throughput (4 cycles × 2 pipes) needs, fewer than the 16
// registers of AVX2, so none spills.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/fma_peak.cpp"
#include <hwy/foreach_target.h>  // must come before highway.h

#include <hwy/highway.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "attn_trace/cpu_kernel.hpp"
#include "kernel_target.hpp"
#include "panel_kernels-inl.hpp"

HWY_BEFORE_NAMESPACE();
namespace attn_trace::HWY_NAMESPACE {

constexpr int accumulators = 12;

// `iterations` rounds of 12 vector multiply-adds; the sum keeps the loop alive.
float fma_spin(long iterations) {
    using S = panel::Simd<float>;
    using Vec = S::Vec;
    Vec acc[accumulators];
#pragma GCC unroll 12
    // Not 0.01: that is the fixed point of a·0.9999 + 10⁻⁶, and GCC then folds the
    // accumulator that starts there into a constant (11 multiply-adds an iteration, not 12).
    for (int i = 0; i < accumulators; ++i) acc[i] = S::splat(0.5f + 0.001f * static_cast<float>(i));
    const Vec factor = S::splat(0.9999f), addend = S::splat(1e-6f);
    for (long k = 0; k < iterations; ++k)
#pragma GCC unroll 12
        for (int i = 0; i < accumulators; ++i) acc[i] = acc[i] * factor + addend;
    float total = 0;
    for (int i = 0; i < accumulators; ++i) total += acc[i][0];
    return total;
}

// Floating-point operations of one iteration: 12 multiply-adds of two flops on each lane.
double fma_flops_per_iteration() { return accumulators * 2.0 * static_cast<double>(panel::Simd<float>::lanes); }

}  // namespace attn_trace::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attn_trace {

HWY_EXPORT(fma_spin);
HWY_EXPORT(fma_flops_per_iteration);

double fma_peak_gflops(int threads) {
    settle_kernel_target();
    // 12 FMAs an iteration at two a cycle is 6 cycles: 6 M iterations take about 12 ms
    // at 3 GHz; the best of 8 runs (noise only ever slows a run) takes about 0.1 s.
    constexpr long iterations = 6'000'000;
    const double flops_per_iteration = HWY_DYNAMIC_DISPATCH(fma_flops_per_iteration)();
    double best = 0;
    for (int run = 0; run < 8; ++run) {
        std::vector<float> sinks(static_cast<std::size_t>(std::max(1, threads)));
        const auto start = std::chrono::steady_clock::now();
        {
            std::vector<std::jthread> workers;
            for (std::size_t t = 0; t < sinks.size(); ++t)
                workers.emplace_back([&sinks, t] { sinks[t] = HWY_DYNAMIC_DISPATCH(fma_spin)(iterations); });
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::max(best, static_cast<double>(sinks.size()) * static_cast<double>(iterations) * flops_per_iteration / seconds / 1e9);
    }
    return best;
}

}  // namespace attn_trace
#endif  // HWY_ONCE
