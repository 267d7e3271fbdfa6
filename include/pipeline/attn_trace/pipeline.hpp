#pragma once
// The pipelines: a validated problem in, a trace out. Full (docs/COMMANDS.md#run), decode
// (docs/COMMANDS.md#decode), tiled (docs/COMMANDS.md#tiled), the fast path
// (docs/COMMANDS.md#run), and the same restricted to a few query rows for explain
// (docs/COMMANDS.md#explain). Each computes through the backend that RunOptions names.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "attn_trace/problem.hpp"
#include "attn_trace/trace.hpp"

namespace attn_trace {

struct RunOptions {
    Dtype dtype = Dtype::f64;
    std::string backend = "cpu";
    // The softmax subtracts each row's max before exp (docs/COMMANDS.md#precision). Only
    // pipeline_full reads false: it then has no row_max step and exp = exp(masked), to show
    // the overflow the shift prevents. The other pipelines always shift.
    bool max_shift = true;
};

// Every step of run (docs/COMMANDS.md#run), for every batch element and head.
Trace pipeline_full(const Problem& problem, const RunOptions& options);

// KV-cache decoding (docs/COMMANDS.md#decode): queries one at a time against a cache that grows
// by one key and value per step.
struct DecodeOptions {
    std::size_t prefill = 0;            // the first P query rows as one bottom-right-aligned causal block
    // For the cache size: 2 · layers · H_kv · d_k · bytes per token. Unset: a model
    // directory's problem counts the whole model as `cost --model` does (its layers, each
    // layer's window), any other problem 1 layer (docs/COMMANDS.md#decode).
    std::optional<int> layers;
    // Bytes per cached number; default the model's checkpoint dtype, else 8 (f64) or 4 (f32).
    std::optional<double> bytes;
    std::optional<std::size_t> tokens;  // cache length for the total; default m
};

// Per step t and KV head g: k_cache, v_cache ((t+1, d) after appending; head = g).
// Per step t and query head h: scores (s·q_t Kᵀ + mask row), weights (1, t+1),
// out (1, d_v). Then out per head (n, d_v), concat/final, and the numbers
// max_abs_diff_vs_full and the cache size. Decode is causal by construction:
// the problem's own masks apply inside the cache, and the reference is the full
// computation with those masks plus causal-bottom-right. Needs m >= n and no X_source.
Trace pipeline_decode(const Problem& problem, const RunOptions& options, const DecodeOptions& decode);

// The tiled pass with online softmax (docs/COMMANDS.md#tiled), FlashAttention's Br × Bc tiles.
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

// The fast path as a pipeline (docs/COMMANDS.md#run): a problem in, a summary trace out.
// It keeps what is O(n) per head — row_max (m), row_sum (ℓ) and out — and never
// the (n, m) steps, so `run` can answer problems whose full trace would not fit.
// The attention itself is the backend's fused kernel (Backend::fused_attention);
// a backend that cannot run this problem's fused attention is BackendUnavailable.
struct FastPathOptions {
    int threads = 0;     // 0 = one per core
    std::size_t block_q = 0, block_k = 0;  // Br, Bc; 0 = the kernel's defaults (tests use small ones)
    std::string reason;  // why the fast path was taken, written as a note in the trace
};

// Steps per batch element and head: row_max, row_sum, out; then concat and
// final (docs/COMMANDS.md#run). Equal to pipeline_full's steps of the same names
// up to summation order.
Trace pipeline_fast(const Problem& problem, const RunOptions& options, const FastPathOptions& fast);

// The backward pass (docs/COMMANDS.md#grad): the gradient of L = Σ d_out ⊙ output (output is
// `final` with W_O, else concat), step by step from the forward trace's own values.
struct GradOptions {
    std::string d_out;               // "ones" or "random:SEED"; empty = the problem's d_out, else ones
    std::optional<std::size_t> row;  // also the softmax Jacobian diag(a_i) − a_i a_iᵀ of this row, per head
    // FlashAttention-2's backward: the forward keeps only lse per row (the fast path's
    // m + ln ℓ), and each Br × Bc tile recomputes p, grad_p and grad_s.
    std::optional<TiledOptions> tiled;
    // The fused backward (Backend::fused_attention_backward): FlashAttention-2's, on the
    // backend's kernel, all heads at once; only O(n) steps per head are kept.
    std::optional<FastPathOptions> fast;
};
// Steps (per batch; per head where per head): grad_final (with W_O), grad_concat,
// grad_W_O, grad_b_O; grad_out, grad_dropped (dropout in train mode), grad_weights,
// grad_masked, grad_capped (softcap), grad_scaled, grad_scores, grad_q_rot and
// grad_k_rot (RoPE), grad_q per query head, grad_k and grad_v per KV head (summed
// over the query heads that read it); from X: grad_W_Q … grad_b_V (summed over the
// batch), grad_x, grad_x_source. With `tiled`: lse and delta per head, p, grad_p
// and grad_s per computed tile (kept while n · m ≤ 65 536 per head), then grad_q,
// grad_k, grad_v and the input gradients, and max_abs_diff_vs_full against the
// untiled gradients (computed while n · m ≤ 4 194 304 per head). With `fast`: grad_final,
// grad_concat, lse and delta per head, grad_q per query head, grad_k and grad_v per KV
// head and the input gradients, no (n, m) step; f32 or f64, masks by key ranges only
// (else BackendUnavailable). Throws InputError
// for a d_out of the wrong shape, a malformed option, a row out of range, MLA
// problems (not traced backward yet), ⟦tiled⟧ or ⟦fast⟧ with ⟦row⟧ or train-mode dropout,
// and ⟦fast⟧ in a half type or with ⟦tiled⟧.
Trace pipeline_grad(const Problem& problem, const RunOptions& options, const GradOptions& grad);

// Runs the named pipeline (run, decode, tiled, grad) on the problem: what a file's
// `expect` entries or a golden trace's command ask for.
Trace compute_trace(const std::string& command, const Problem& problem, const RunOptions& options, const DecodeOptions& decode = {},
                    const TiledOptions& tiled = {}, const GradOptions& grad = {});

// Sets each step's max_abs_error_vs_f64 and lost_cells (trace.hpp) from `f64`, the same
// pipeline run on the same problem in f64 (docs/PROBLEM.md#dtype-half-precision). A step is
// paired with the f64 step of the same name and place; one without a pair stays unset.
void compare_with_f64(Trace& trace, const Trace& f64);
// pipeline(options); for a dtype other than f64 also pipeline in f64, compared with
// compare_with_f64. When the f64 run refuses the problem (its own overflow, say) the
// errors stay unset: there is nothing exact to measure against.
Trace traced_against_f64(const RunOptions& options, const std::function<Trace(const RunOptions&)>& pipeline);

// The query rows a pipeline computes: all n of them, or (for explain) a few, each
// keeping its true index for causal masks, RoPE positions and ALiBi distances, so
// that every number equals the full computation's while memory stays O(rows · m).
struct QueryRows {
    std::size_t first = 0, count = 0;
};
inline QueryRows all_query_rows(const Problem& problem) { return {0, problem.n}; }

// The pipelines restricted to what one explanation reads (docs/COMMANDS.md#explain):
// the query rows it needs instead of all n, so memory is O((rows + m) · d + rows · m)
// rather than n · m. Every number equals the whole pipeline's: each row keeps its
// true index for the masks, RoPE positions and ALiBi distances, and a row of a
// product depends on its own row of the inputs only.

// pipeline_full for batch element `batch` and the query rows `rows`: the
// query-indexed steps (x, q, q_rot, scores … out, concat, final) hold rows.count
// rows, row r being query rows.first + r; k, v, k_rot and x_source stay whole.
// No notes and no numbers: they describe the whole problem.
Trace pipeline_full_rows(const Problem& problem, const RunOptions& options, std::size_t batch, QueryRows rows);

// pipeline_decode's steps (k_cache, v_cache, scores, weights, out, all carrying t)
// of the one decode step that handles query t (the prefill block when t < P).
Trace pipeline_decode_step(const Problem& problem, const RunOptions& options, const DecodeOptions& decode, std::size_t batch, std::size_t t);

// pipeline_tiled's tile steps of query block qb for key tiles 0 … last_tile
// (skipped tiles are absent, as in the whole trace).
Trace pipeline_tiled_block(const Problem& problem, const RunOptions& options, const TiledOptions& tiled, std::size_t batch, std::size_t qb,
                           std::size_t last_tile);

}  // namespace attn_trace
