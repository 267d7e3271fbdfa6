#pragma once
// The judge of `bench --grad`: grad_q of a few query rows from the CPU reference
// pipeline's own weights, in plain loops.
#include "attn_trace/attention_parts.hpp"
#include "attn_trace/matrix.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/problem.hpp"

namespace attn_trace {

// Rows `rows` of grad_q (rows.count, H·d_k) for the upstream gradient d_out (n, H·d_v) of the
// heads' concatenated out, without projections: from pipeline_full_rows's weights A,
// grad_q_i = s · Σ_j a_ij (g_ij − δ_i) k_j with g_ij = d_out_i · v_j and δ_i = Σ_j a_ij g_ij
// (docs/COMMANDS.md#grad). O(rows · m · d) per head.
Matrix reference_grad_q_rows(const Problem& problem, const RunOptions& options, const Matrix& d_out, QueryRows rows);

}  // namespace attn_trace
