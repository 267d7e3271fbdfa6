#pragma once
// `bench` (docs/COMMANDS.md#bench): the attention implementations timed side by side on the
// same random inputs, one setting (n, d_k, heads, causal) after another.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attn_trace/problem.hpp"

namespace attn_trace {

struct BenchConfig {
    std::vector<std::size_t> lengths{128, 1024, 8192};  // n (= m: self-attention)
    std::size_t d_k = 64;                                // d_v = d_k
    int heads = 1;
    bool causal = false;
    int threads = 1;
    std::vector<std::string> impls{"naive", "fast"};     // naive, fast, cuda
    int repeats = 5, warmup = 1;
    Dtype dtype = Dtype::f32;
    std::uint64_t seed = 0;
    std::size_t block_q = 0, block_k = 0;                // 0 = the kernel's defaults
    // naive holds the whole (n, m) score matrix: skipped above this many bytes.
    double naive_budget_bytes = 2.0 * (1 << 30);
    std::string dump_dir;                                // raw inputs and outputs go here when set
};

struct BenchResult {
    std::size_t n = 0, m = 0;
    std::string impl;
    std::string status = "ok";      // ok, skipped, unavailable
    std::string reason;             // why not ok; its settings marked as errors mark them (errors.hpp)
    std::vector<double> times_ms;   // each repeat after the warm-up
    double median_ms = 0, min_ms = 0, max_ms = 0;
    double gflops = 0;              // 4·n·m·d_k per head (half when causal) / median
    std::size_t score_bytes = 0;    // peak bytes held for scores
    std::optional<double> max_abs_diff;  // largest |out − out of compared_with|
    std::string compared_with;
};

// Called before each timed or warm-up run: (setting index, settings count, impl, run, runs).
using BenchProgress = std::function<void(std::size_t, std::size_t, const std::string&, int, int)>;

// The inputs of setting n are those of `attn-trace random --n n --dk d_k --heads H
// --seed seed`: Q, K, V from the portable generator with seeds seed, seed+1, seed+2.
std::vector<BenchResult> run_bench(const BenchConfig& config, const BenchProgress& progress);

// Floating-point operations the bench credits one setting with.
double attention_flops(std::size_t n, std::size_t m, std::size_t d_k, int heads, bool causal);

}  // namespace attn_trace
