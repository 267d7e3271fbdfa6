// The machine's own limit for the fast path: fused multiply-adds per second on
// 8-float vectors, with 12 independent accumulators per thread (enough to hide
// the FMA latency on two FMA pipes), on `threads` threads at once.
// bench/compare_torch.py compiles it with -O2 -march=native and prints its figure
// next to numpy's sgemm:   fma_peak [threads]   →   GFLOP/s for all threads together
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

typedef float Vec __attribute__((vector_size(32)));

static float spin(long iterations) {
    Vec acc[12];
    for (int i = 0; i < 12; ++i) acc[i] = Vec{} + 0.001f * static_cast<float>(i);
    const Vec factor = Vec{} + 0.9999f, addend = Vec{} + 1e-6f;
    for (long k = 0; k < iterations; ++k)
#pragma GCC unroll 12
        for (int i = 0; i < 12; ++i) acc[i] = acc[i] * factor + addend;
    float total = 0;
    for (int i = 0; i < 12; ++i) total += acc[i][0];
    return total;  // used, so the loop is not optimised away
}

int main(int argc, char** argv) {
    const int threads = argc > 1 ? std::max(1, std::atoi(argv[1])) : 1;
    const long iterations = 100000000;  // 19.2 GFLOP per thread: about 0.2 s
    double best = 0;
    for (int run = 0; run < 5; ++run) {  // the best of five: noise only ever slows it
        std::vector<float> sinks(static_cast<std::size_t>(threads));
        const auto start = std::chrono::steady_clock::now();
        {
            std::vector<std::jthread> workers;
            for (int t = 0; t < threads; ++t) workers.emplace_back([&, t] { sinks[static_cast<std::size_t>(t)] = spin(iterations); });
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const double gflops = threads * iterations * 12.0 * 16.0 / seconds / 1e9;  // 12 FMAs × 8 lanes × 2 flops
        if (gflops > best) best = gflops;
        if (sinks[0] == 42.0f) std::puts("");
    }
    std::printf("%.1f\n", best);
}
