// What one bench setting holds at its peak, estimated before anything is allocated
// (docs/COMMANDS.md#bench): run_bench refuses a run with a setting past the budget.
//
// Each term counts the buffers as bench.cpp and the CPU backend allocate them, in bytes,
// with n queries, m keys, H query heads and H_kv KV heads of width d, e bytes per
// element of the dtype (4 or 8) and 8 per double:
//   inputs     Q (n, H·d), K and V (m, H_kv·d) as doubles; for a float32 decode step also
//              bench's float copy of them; the causal mask's two key ranges per row; for
//              a backward setting also d_out (n, H·d).
//   kernel     what one call allocates and frees again: the packed or rounded copies of
//              its inputs, its outputs in the dtype, each worker's tile scratch (which
//              grows with --block-q and --block-k, the backward's with their product),
//              and naive's score rows (n, m).
//   results    the result as double matrices, twice: a timed run's result is assigned
//              over the previous one only after the call has returned.
//   reference  the reference rows' trace: about eight rows × m matrices per head (as in
//              the full pipeline's own estimate) and six more for the head at work, its
//              k and v steps (K and V again) and one head's slices of them.
// The kernels pad widths and tiles to whole vectors (at most 16 elements) and query rows
// to panels (at most 32 rows): each padded size is counted as its bound, x + 16 or x + 32.
#include <algorithm>
#include <cmath>

#include "attn_trace/bench.hpp"

namespace attn_trace {

namespace {

constexpr double double_bytes = 8;
constexpr double panel_rows = 32;  // the fused kernel's rows per panel, at most (2 vectors of 16 floats)

// The rows bench.cpp's reference computes at once: one block of at most 8, or all of a short sequence.
double reference_rows(std::size_t n) { return n <= 24 ? static_cast<double>(n) : 8; }

// A width or tile length rounded up to whole vectors: at most 16 more; query rows rounded up
// to whole panels: at most 32 more.
double padded(double x) { return x + 16; }
double padded_rows(double x) { return x + panel_rows; }

// Br or Bc as a kernel takes it: the option, else the kernel's default, at most the length.
double block(std::size_t option, std::size_t fallback, double length) { return std::min(static_cast<double>(option ? option : fallback), length); }

// Elements of the fused forward kernel's buffers (fast_attention.cpp, attention_buffers-inl.hpp):
// K and V of every KV head packed tile by tile, and each worker's packed queries, one panel's
// scores and its running u, m and ℓ.
double forward_kernel_elements(double m, double d, double kv_heads, double workers, double block_q, double block_k) {
    const double tiles = std::ceil(m / block_k);
    const double packed = kv_heads * tiles * (padded(block_k) * d + padded(d) * block_k);
    const double scratch = padded_rows(block_q) * d + padded(block_k) * panel_rows + padded_rows(block_q) * padded(d) + 3 * padded_rows(block_q) + panel_rows;
    return packed + workers * scratch;
}

}  // namespace

// While a run is timed: its kernel's buffers and two results; after the last run, one
// result beside the reference rows. A sixteenth more for what is too small to count one
// by one (labels, the allocator's rounding): without it the measured peak came within 1 %.
double BenchMemory::total() const {
    const double counted = inputs + std::max(kernel + results, results / 2 + reference);
    return counted + counted / 16;
}

double naive_score_bytes(const BenchConfig& c, std::size_t n, std::size_t m) {
    return static_cast<double>(n) * static_cast<double>(m) * (c.dtype == Dtype::f32 ? 4 : 8);
}

BenchMemory bench_memory(const BenchConfig& c, const BenchSetting& setting, const std::string& impl) {
    const bool decode = setting.mode == BenchMode::decode, backward = setting.mode == BenchMode::backward;
    const double e = c.dtype == Dtype::f32 ? 4 : 8;
    const double n = static_cast<double>(setting.queries()), m = static_cast<double>(setting.length);
    const double d = static_cast<double>(c.d_k), heads = c.heads, kv_heads = c.kv_head_count(), threads = std::max(1, c.threads);
    const double queries = n * heads * d, keys = m * kv_heads * d;  // elements of Q (and out, dQ); of K (and V, dK, dV)
    const double row_stats = n * heads;                              // elements of one statistic per row and head

    BenchMemory memory;
    memory.inputs = (queries + 2 * keys) * double_bytes;
    if (decode && c.dtype == Dtype::f32) memory.inputs += (queries + 2 * keys) * 4;
    if (c.causal) memory.inputs += 2 * n * sizeof(std::size_t);
    if (backward) memory.inputs += queries * double_bytes;

    if (backward) {
        // The forward (the fused kernel with its own default tiles), then the backward kernel
        // (flash_backward.cpp): out, dQ, dK, dV, lse, delta, m and ℓ in the dtype; Q and d_out
        // packed with padded widths, lse in base 2; per worker (at most one per key tile) the
        // packed tile and its dK and dV sums, one tile's P and dP, and dQ for the query heads
        // of one KV head. Both phases are counted together.
        const double block_q = block(c.block_q, 64, n), block_k = block(c.block_k, 64, m);
        const double workers = std::min(threads, std::ceil(m / block_k)), group = heads / kv_heads;
        const double outputs = 2 * queries + 2 * keys + 4 * row_stats;
        const double forward = forward_kernel_elements(m, d, kv_heads, threads, block(0, 256, n), block(0, 256, m));
        const double packed = 2 * n * heads * padded(d) + row_stats;
        const double scratch = 5 * padded(block_k) * padded(d) + 2 * block_q * padded(block_k) + group * n * padded(d);
        memory.kernel = (outputs + forward + packed + workers * scratch) * e;
        memory.results = 2 * (2 * queries + 2 * keys + 2 * row_stats) * double_bytes;
    } else if (decode && impl == "fast") {
        // The float32 kernel reads bench's float copies, the float64 one the doubles in place.
        // Per chunk (four per thread) each query head's partial m, ℓ and u; per worker the
        // scaled queries and one block of 32 keys' scores.
        memory.kernel = (queries + 4 * threads * heads * (padded(d) + 2) + threads * heads * (padded(d) + padded(32))) * e;
        memory.results = 2 * queries * double_bytes;
    } else if (impl == "fast") {
        // K and V packed, out, m and ℓ, and each worker's scratch.
        memory.kernel = (forward_kernel_elements(m, d, kv_heads, threads, block(c.block_q, 256, n), block(c.block_k, 256, m)) + queries + 2 * row_stats) * e;
        memory.results = 2 * (queries + 2 * row_stats) * double_bytes;
    } else {
        // naive and cuda: rounded copies of Q, K and V (on the host) and out; for naive the
        // score rows of every worker: (n, m) together.
        memory.kernel = (2 * queries + 2 * keys) * e;
        if (impl == "naive") memory.kernel += naive_score_bytes(c, setting.queries(), setting.length);
        memory.results = 2 * (queries + 2 * row_stats) * double_bytes;
    }
    memory.reference = ((8 * heads + 6) * reference_rows(setting.queries()) * m + 2 * keys + 2 * m * d) * double_bytes;
    return memory;
}

}  // namespace attn_trace
