#pragma once
// The fast path as a pipeline (SPEC §12): a problem in, a summary trace out.
// It keeps what is O(n) per head — row_max (m), row_sum (ℓ) and out — and never
// the (n, m) steps, so `run` can answer problems whose full trace would not fit.
#include <cstddef>
#include <string>

#include "attn_trace/pipeline.hpp"

namespace attn_trace {

struct FastPathOptions {
    int threads = 0;     // 0 = one per core
    std::size_t block_q = 0, block_k = 0;  // Br, Bc; 0 = the kernel's defaults (tests use small ones)
    std::string reason;  // why the fast path was taken, written as a note in the trace
};

// Steps per batch element and head: row_max, row_sum, out; then concat and
// final as in SPEC §4. Equal to pipeline_full's steps of the same names up to
// summation order.
Trace pipeline_fast(const Problem& problem, const RunOptions& options, const FastPathOptions& fast);

}  // namespace attn_trace
