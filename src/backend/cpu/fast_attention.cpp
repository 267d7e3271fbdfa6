// The fused, tiled attention kernel of the fast path (docs/COMMANDS.md#tiled without the
// printing; docs/PERFORMANCE.md#design-and-why). Paper symbols (FlashAttention): Br query
// rows per block, Bc keys per tile; per row the running max m, the running sum ℓ and the
// running weighted sum u (here U, Br × d_v).
//
// Per (head h, query block Q_b):                                  shapes
//   m = −∞, ℓ = 0, U = 0                                          (Br), (Br), (Br, d_v)
//   for each key tile K_t, V_t that some row of the block may read:
//     S = s·Q_b K_tᵀ (+ softcap) + M_bt                           (Br, Bc)
//     m' = max(m, rowmax S);  P = e^(S − m');  r = e^(m − m')     (Br, Bc), (Br)
//     ℓ = r·ℓ + rowsum P;  U = r·U + P V_t;  m = m'               (Br), (Br, d_v)
//   O_b = U / ℓ                                                   (Br, d_v)
//
// Where each part is: this file shares the (head, query block) items out among the
// workers and holds each target's entry points and the dispatch; block_worker-inl.hpp
// runs one block (the loop above, the packing, the mask's key ranges);
// attention_buffers-inl.hpp holds the packed K and V and each worker's scratch;
// panel_kernels-inl.hpp has the micro-kernels.
//
// How it is laid out (panel_kernels-inl.hpp): K and V are packed tile by tile once,
// before any block starts, in the order the micro-kernels read them; the block's
// queries go in panels of NR (two vectors: 16 floats with AVX2, 32 with AVX-512),
// packed once per block, and every panel reads every K and V tile it needs. Per panel
// and tile the scores are a (Bc, NR) column of the block, in L1, which the softmax
// walks down lane by lane and the second product reads as it is. The softmax works in
// base 2: the scores are scaled by log₂e once (folded into the packed queries when
// nothing else touches the scores) and 2^x is cheaper than e^x; m is reported back in
// natural units. Where a tile needs no masking, P is taken right after each group of S
// rows is computed, shifted by the m from before the tile, and m catches up afterwards
// (exp_in_place): one pass over S instead of three.
//
// Compiled once per target (Highway's foreach_target.h includes this file, and with it
// the -inl.hpp files, again for each: AVX-512, AVX2 + FMA, the x86-64 baseline), each
// copy in its own namespace (attn_trace::N_AVX2, …) under a #pragma GCC target region,
// and the CPU's best one called through Highway's dispatch table (the HWY_ONCE part at
// the end); src/backend/cpu/kernel_target.cpp chooses and names it.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/fast_attention.cpp"
#include <hwy/foreach_target.h>  // must come before highway.h

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "attention_buffers-inl.hpp"
#include "attn_trace/parallel.hpp"
#include "block_worker-inl.hpp"
#include "fast_attention.hpp"
#include "kernel_target.hpp"
#include "panel_kernels-inl.hpp"

HWY_BEFORE_NAMESPACE();
namespace attn_trace::HWY_NAMESPACE {

namespace {

template <typename T, typename Source>
AttentionStats fast_attention_on_target(const FastAttentionInput<T, Source>& input, const FastAttentionOutput<T>& output,
                                  const FastAttentionSettings& settings) {
    const std::size_t threads = static_cast<std::size_t>(std::max(1, settings.threads));
    // Br shrinks (to whole panels) when the sequence is short, so that there are
    // at least two (head, block) items per worker to share out. Not more: every
    // block reads all of K and V again, and at n = 1024 on 2 threads four blocks of
    // 256 took 2.70 ms (median of 8 runs) where eight of 128 took 2.90 and sixteen
    // of 64 took 2.96.
    const std::size_t fair = round_up((input.n * static_cast<std::size_t>(input.heads) + 2 * threads - 1) / (2 * threads), panel::NR<T>);
    const std::size_t block_q = std::max<std::size_t>(1, std::min({settings.block_q, input.n, fair}));
    const std::size_t block_k = std::max<std::size_t>(1, std::min(settings.block_k, input.m));
    const std::size_t blocks = (input.n + block_q - 1) / block_q;
    const std::size_t items = blocks * static_cast<std::size_t>(input.heads);
    const int workers = static_cast<int>(std::clamp<std::size_t>(items, 1, threads));

    PackedKeysValues<T> packed(static_cast<std::size_t>(input.kv_heads), input.m, block_k, input.d_k, input.d_v,
                               BlockWorker<T, Source>::operands_in_place);
    const BlockWorker<T, Source> worker(input, output, packed, block_k);
    parallel_for(static_cast<std::size_t>(input.kv_heads) * packed.tiles, workers,
                 [&](std::size_t item, int) { worker.pack_tile(item / packed.tiles, item % packed.tiles); });

    std::vector<BlockScratch<T>> scratch;
    for (int id = 0; id < workers; ++id) scratch.emplace_back(block_q, block_k, input.d_k, input.d_v);
    std::vector<AttentionStats> stats(static_cast<std::size_t>(workers));
    // Last blocks first: under a causal mask they read the most tiles, and
    // starting with the longest items keeps the workers' finishing times close.
    parallel_for(items, workers, [&](std::size_t item, int id) {
        const int h = static_cast<int>(item / blocks);
        const std::size_t b = blocks - 1 - item % blocks;
        const std::size_t i0 = b * block_q;
        worker.run(h, i0, std::min(block_q, input.n - i0), scratch[static_cast<std::size_t>(id)], stats[static_cast<std::size_t>(id)]);
    });

    AttentionStats total;
    for (const auto& s : stats) {
        total.tiles_computed += s.tiles_computed;
        total.tiles_skipped += s.tiles_skipped;
    }
    total.score_bytes_held = static_cast<std::size_t>(workers) * scratch.front().scores.size() * sizeof(T);
    total.workers = workers;
    total.block_q = block_q;
    total.block_k = block_k;
    return total;
}

}  // namespace

// This target's entries in the dispatch table (one name each: HWY_EXPORT takes no overloads).
AttentionStats fast_attention_f32(const FastAttentionInput<float>& in, const FastAttentionOutput<float>& out, const FastAttentionSettings& settings) {
    return fast_attention_on_target(in, out, settings);
}
AttentionStats fast_attention_f32_from_f64(const FastAttentionInput<float, double>& in, const FastAttentionOutput<float>& out,
                                           const FastAttentionSettings& settings) {
    return fast_attention_on_target(in, out, settings);
}
AttentionStats fast_attention_f64(const FastAttentionInput<double>& in, const FastAttentionOutput<double>& out, const FastAttentionSettings& settings) {
    return fast_attention_on_target(in, out, settings);
}
std::int64_t this_target() { return HWY_TARGET; }

}  // namespace attn_trace::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attn_trace {

HWY_EXPORT(fast_attention_f32);
HWY_EXPORT(fast_attention_f32_from_f64);
HWY_EXPORT(fast_attention_f64);
HWY_EXPORT(this_target);

// Every call first settles which target runs (ATTN_TRACE_KERNEL, once).
AttentionStats fast_attention(const FastAttentionInput<float>& in, const FastAttentionOutput<float>& out, const FastAttentionSettings& settings) {
    settle_kernel_target();
    return HWY_DYNAMIC_DISPATCH(fast_attention_f32)(in, out, settings);
}
AttentionStats fast_attention(const FastAttentionInput<float, double>& in, const FastAttentionOutput<float>& out, const FastAttentionSettings& settings) {
    settle_kernel_target();
    return HWY_DYNAMIC_DISPATCH(fast_attention_f32_from_f64)(in, out, settings);
}
AttentionStats fast_attention(const FastAttentionInput<double>& in, const FastAttentionOutput<double>& out, const FastAttentionSettings& settings) {
    settle_kernel_target();
    return HWY_DYNAMIC_DISPATCH(fast_attention_f64)(in, out, settings);
}

std::int64_t compiled_kernel_targets() { return HWY_TARGETS; }
std::int64_t dispatched_kernel_target() {
    settle_kernel_target();
    return HWY_DYNAMIC_DISPATCH(this_target)();
}

}  // namespace attn_trace
#endif  // HWY_ONCE

