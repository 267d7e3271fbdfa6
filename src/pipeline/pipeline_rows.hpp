#pragma once
// The pipelines restricted to what one explanation reads (SPEC §8, explain):
// the query rows it needs instead of all n, so memory is O((rows + m) · d + rows · m)
// rather than n · m. Every number equals the whole pipeline's: each row keeps its
// true index for the masks, RoPE positions and ALiBi distances, and a row of a
// product depends on its own row of the inputs only.
#include <cstddef>

#include "attention_parts.hpp"
#include "attn_trace/pipeline.hpp"

namespace attn_trace {

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
