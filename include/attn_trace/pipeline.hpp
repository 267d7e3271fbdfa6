#pragma once
// The pipelines: a validated problem in, a trace out.
#include <cstddef>
#include <optional>
#include <string>

#include "attn_trace/problem.hpp"
#include "attn_trace/trace.hpp"

namespace attn_trace {

struct RunOptions {
    Dtype dtype = Dtype::f64;
    std::string backend = "cpu";
};

// Every step of SPEC §4, for every batch element and head.
Trace pipeline_full(const Problem& problem, const RunOptions& options);

// KV-cache decoding (SPEC §6): queries one at a time against a cache that grows
// by one key and value per step.
struct DecodeOptions {
    std::size_t prefill = 0;            // the first P query rows as one bottom-right-aligned causal block
    int layers = 1;                     // for the cache size: 2 · layers · H_kv · d_k · bytes per token
    std::optional<double> bytes;        // bytes per cached number; default 8 (f64) or 4 (f32)
    std::optional<std::size_t> tokens;  // cache length for the total; default m
};

// Per step t and KV head g: k_cache, v_cache ((t+1, d) after appending; head = g).
// Per step t and query head h: scores (s·q_t Kᵀ + mask row), weights (1, t+1),
// out (1, d_v). Then out per head (n, d_v), concat/final, and the numbers
// max_abs_diff_vs_full and the cache size. Decode is causal by construction:
// the problem's own masks apply inside the cache, and the reference is the full
// computation with those masks plus causal-bottom-right. Needs m >= n and no X_source.
Trace pipeline_decode(const Problem& problem, const RunOptions& options, const DecodeOptions& decode);

// The tiled pass with online softmax (SPEC §7), FlashAttention's Br × Bc tiles.
// Small defaults so that a hand-sized example shows several tiles.
struct TiledOptions {
    std::size_t block_q = 2;  // Br: query rows per block
    std::size_t block_k = 2;  // Bc: keys per tile
};
// Throws InputError for a block of no rows or a tile of no keys.
void validate_tiles(const TiledOptions& tiled);

// Per computed tile [qb, kt] and head: scores, m, rescale, l, u. Tiles whose
// every score is masked are skipped and counted. Then out = u / ℓ per head,
// concat/final, and max_abs_diff_vs_full, scores_held, tiles_skipped.
Trace pipeline_tiled(const Problem& problem, const RunOptions& options, const TiledOptions& tiled);

}  // namespace attn_trace
