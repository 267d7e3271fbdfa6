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
//              its inputs, its outputs in the dtype, and naive's score rows (n, m).
//   results    the result as double matrices, twice: a timed run's result is assigned
//              over the previous one only after the call has returned.
//   reference  the reference rows' trace: about eight rows × m matrices per head (as in
//              the full pipeline's own estimate), its k and v steps (K and V again) and one
//              head's slices of them.
// Padding to whole vectors and per-worker tile scratch (kilobytes) are left out.
#include <algorithm>
#include <cmath>

#include "attn_trace/bench.hpp"

namespace attn_trace {

namespace {

constexpr double double_bytes = 8;

// The rows bench.cpp's reference computes at once: one block of at most 8, or all of a short sequence.
double reference_rows(std::size_t n) { return n <= 24 ? static_cast<double>(n) : 8; }

}  // namespace

// While a run is timed: its kernel's buffers and two results; after the last run, one
// result beside the reference rows.
// A sixteenth more for what is too small to count one by one (tile scratch, labels, the
// allocator's rounding): without it the measured peak came within 1 % of the estimate.
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
    const double n = decode ? 1 : static_cast<double>(setting.length), m = static_cast<double>(setting.length);
    const double d = static_cast<double>(c.d_k);
    const double queries = n * c.heads * d, keys = m * c.kv_head_count() * d;  // elements of Q (and out, dQ); of K (and V, dK, dV)
    const double row_stats = n * c.heads;                                        // elements of one statistic per row and head

    BenchMemory memory;
    memory.inputs = (queries + 2 * keys) * double_bytes;
    if (decode && c.dtype == Dtype::f32) memory.inputs += (queries + 2 * keys) * 4;
    if (c.causal) memory.inputs += 2 * n * sizeof(std::size_t);
    if (backward) memory.inputs += queries * double_bytes;

    if (backward) {
        // The forward's packed K and V (freed before the backward kernel starts, counted anyway);
        // out, dQ, dK, dV, lse, delta, m and ℓ in the dtype; the backward kernel's packed Q and
        // d_out, its lse in base 2, and each worker's dQ for the query heads of one KV head.
        const double group = static_cast<double>(c.heads / c.kv_head_count());
        const double tiles = std::ceil(m / static_cast<double>(c.block_k ? c.block_k : 64));
        const double workers = std::clamp<double>(tiles, 1, std::max(1, c.threads));
        memory.kernel = (2 * keys + 2 * queries + 2 * keys + 4 * row_stats + 2 * queries + row_stats + workers * group * n * d) * e;
        memory.results = 2 * (2 * queries + 2 * keys + 2 * row_stats) * double_bytes;
    } else if (decode && impl == "fast") {
        // The float32 kernel reads bench's float copies, the float64 one the doubles in place;
        // its partial softmaxes per chunk are a few kilobytes.
        memory.kernel = queries * e;
        memory.results = 2 * queries * double_bytes;
    } else {
        // fast: K and V packed, out, m and ℓ; naive and cuda: rounded copies of Q, K and V
        // (on the host), out, and for naive the score rows of every worker: (n, m) together.
        memory.kernel = impl == "fast" ? (2 * keys + queries + 2 * row_stats) * e : (2 * queries + 2 * keys) * e;
        if (impl == "naive") memory.kernel += naive_score_bytes(c, setting.mode == BenchMode::decode ? 1 : setting.length, setting.length);
        memory.results = 2 * (queries + 2 * row_stats) * double_bytes;
    }
    memory.reference = (8 * reference_rows(static_cast<std::size_t>(n)) * m * c.heads + 2 * keys + 2 * m * d) * double_bytes;
    return memory;
}

}  // namespace attn_trace
