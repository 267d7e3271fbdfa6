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
#include "attn_trace/roofline.hpp"

namespace attn_trace {

// What one setting times. Each mode has its settings (bench_settings), inputs, its
// implementations (bench.cpp's `implementation`) and its work (bench_work): a new kind
// of benchmark is one more value here and a case in each of those.
enum class BenchMode {
    forward,  // self-attention of n queries over n keys (n = m)
    decode,   // one decode step: one query per head over a KV cache of T tokens
    backward, // the fused backward of self-attention of n queries (forward included): dQ, dK, dV
};
std::string bench_mode_name(BenchMode mode);  // "forward", "decode", "backward"

struct BenchConfig {
    std::vector<std::size_t> lengths{128, 1024, 8192};  // forward (or backward) settings: n (= m)
    bool backward = false;                               // the lengths time the fused backward, not the forward
    std::vector<std::size_t> cache_lengths;              // decode settings: the cache length T (after the forward ones)
    std::size_t d_k = 64;                                // d_v = d_k
    int heads = 1;
    int kv_heads = 0;                                    // 0 = heads; heads must be a multiple (GQA)
    bool causal = false;
    int threads = 1;
    std::vector<std::string> impls{"naive", "fast"};     // naive, fast, cuda
    int repeats = 5, warmup = 1;
    Dtype dtype = Dtype::f32;
    std::uint64_t seed = 0;
    std::size_t block_q = 0, block_k = 0;                // 0 = the kernel's defaults
    // naive holds the whole (n, m) score matrix: skipped above this many bytes.
    double naive_budget_bytes = 2.0 * (1 << 30);
    // A run with a setting whose estimate (bench_memory) passes this is refused before anything is
    // measured; 4 GiB, the default memory budget of every command.
    double memory_budget_bytes = 4.0 * (1 << 30);
    std::string dump_dir;                                // raw inputs and outputs go here when set
    bool measure_roofs = true;                           // false: no roofs, no roofline figures (tests)

    int kv_head_count() const { return kv_heads ? kv_heads : heads; }
};

// The work one setting is credited with: floating-point operations, and the bytes of
// its inputs read once and outputs written once (in the dtype); for decode also the
// bytes of KV cache.
struct BenchWork {
    double flops = 0, bytes = 0, cache_bytes = 0;
};
BenchWork bench_work(const BenchConfig& config, BenchMode mode, std::size_t length);

struct BenchSetting {
    BenchMode mode = BenchMode::forward;
    std::size_t length = 0;  // forward: n; decode: T
    std::size_t queries() const { return mode == BenchMode::decode ? 1 : length; }  // n: decode steps have one query
};
// The settings of a run in order: forward ones (lengths), then decode ones (cache_lengths).
std::vector<BenchSetting> bench_settings(const BenchConfig& config);

// What one setting holds at its peak with one implementation, in bytes, estimated from the
// configuration alone (src/bench/bench_memory.cpp counts each term): the inputs (Q, K, V as
// doubles, and what bench adds beside them), what one call of the kernel allocates, the results
// (two at once: a repeat's is assigned over the last) and the reference rows' trace.
struct BenchMemory {
    double inputs = 0, kernel = 0, results = 0, reference = 0;
    // The inputs, and the larger of the kernel's buffers with two results (while timing) and one
    // result with the reference rows (after); a sixteenth more for what is not counted.
    double total() const;
};
BenchMemory bench_memory(const BenchConfig& config, const BenchSetting& setting, const std::string& impl);
// The bytes of naive's (n, m) score matrix: a setting where it passes naive_budget_bytes is skipped for naive.
double naive_score_bytes(const BenchConfig& config, std::size_t n, std::size_t m);

struct BenchResult {
    BenchMode mode = BenchMode::forward;
    std::size_t n = 0, m = 0;       // decode: n = 1, m = T
    std::string impl;
    std::string status = "ok";      // ok, skipped, unavailable
    std::string reason;             // why not ok; its settings marked as errors mark them (errors.hpp)
    std::vector<double> times_ms;   // each repeat after the warm-up
    double median_ms = 0, min_ms = 0, max_ms = 0;
    double gflops = 0;              // 4·n·m·d_k per head (half when causal) / median
    std::size_t score_bytes = 0;    // peak bytes held for scores
    std::optional<double> max_abs_diff;  // largest |out − out of compared_with|
    std::string compared_with;
    BenchWork work;
    std::optional<RooflinePoint> roofline;  // when the roofs were measured
    double cache_gb_per_s = 0;              // decode: bytes of KV cache / median
};

struct BenchRun {
    std::optional<Roofs> roofs;  // measured first, on the run's threads
    std::vector<BenchResult> results;
};

// Called before each timed or warm-up run: (setting index, settings count, impl, run, runs).
using BenchProgress = std::function<void(std::size_t, std::size_t, const std::string&, int, int)>;

// The inputs of setting n are those of `attn-trace random --n n --dk d_k --heads H
// --seed seed`: Q, K, V from the portable generator with seeds seed, seed+1, seed+2.
// Decode: Q (1, H·d_k), K and V (T, H_kv·d_k) with the same generator and seeds.
// Throws InputError when heads is not a multiple of kv_heads.
BenchRun run_bench(const BenchConfig& config, const BenchProgress& progress);

// Floating-point operations the bench credits one setting with.
double attention_flops(std::size_t n, std::size_t m, std::size_t d_k, int heads, bool causal);

}  // namespace attn_trace
