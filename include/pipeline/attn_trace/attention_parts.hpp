#pragma once
// The pieces of attention that every pipeline (full, decode, tiled, fast) shares,
// so each is written once: projections, head slices, RoPE, masks, the softmax
// steps. Public because teach's explanations and pitfalls build on the same
// pieces (QueryRows is pipeline.hpp's).
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "attn_trace/backend.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/problem.hpp"
#include "attn_trace/random.hpp"
#include "attn_trace/trace.hpp"

namespace attn_trace {

// The problem with its input matrices, weights and biases rounded to a half type (a
// value already of the type is kept exactly, as a bf16 checkpoint's weights are);
// nullopt for f64 and f32, which read the problem as it is.
std::optional<Problem> stored_in(const Problem& problem, Dtype dtype);

// q (n, H·d_k), k (m, H_kv·d_k), v (m, H_kv·d_v) for one batch element.
// With `rows`, q holds only those query rows (rows.count, H·d_k); k and v stay whole.
// With qk-norm, q and k are the normed ones and q_raw, k_raw what the projections gave.
struct Projections {
    Matrix q, k, v;
    Matrix q_raw = {}, k_raw = {};  // empty without qk-norm
};
// x (rows, d_in) · w (d_in, d_out) + b -> (rows, d_out), in the dtype.
Matrix affine(const Matrix& x, const Matrix& w, const std::optional<std::vector<double>>& bias, const Backend& backend, Dtype dtype);

// Q = X W_Q + b_Q, K = X_src W_K + b_K, V = X_src W_V + b_V (or Q, K, V as given).
Projections project(const Problem& problem, std::size_t batch, const Backend& backend, Dtype dtype);
Projections project(const Problem& problem, std::size_t batch, const Backend& backend, Dtype dtype, QueryRows rows);

// x / √(mean(x²) + eps) · (offset + w) over each `group` columns of a row
// (docs/PROBLEM.md#qk-norm): per head, the weight repeats for every head.
// A weight of `group` values repeats for every group; one of x.cols() values is per column.
Matrix rms_norm(const Matrix& x, const std::vector<double>& weight, double eps, double weight_offset, std::size_t group, Dtype dtype);

// MLA's products for one batch element
// (docs/FAMILY.md#mla-multi-head-latent-attention-deepseek-v2), what `run` shows: the
// latent c_kv (m, d_c); c_q (rows, d_cq) with query compression, else empty; q (rows,
// H·d_content), k (m, H·d_content), v (m, H·d_v); with rope_dims, q_rope (rows, H·d_r)
// and k_rope (m, d_r) already turned by RoPE, else empty.
struct MlaParts {
    Matrix c_kv, c_q, q, k, v, q_rope, k_rope;
    Matrix c_kv_raw = {}, c_q_raw = {};  // before the latent norms, when the problem has them (c_kv, c_q are normed)
};
MlaParts mla_parts(const Problem& problem, std::size_t batch, const Backend& backend, Dtype dtype, QueryRows rows);
// The parts as every pipeline reads them: head h's query [q_h, q_rope_h] and key
// [k_h, k_rope], so q'·k' = q_h k_hᵀ + q_rope_h k_ropeᵀ (Problem::d_k wide).
Projections mla_projections(const Problem& problem, const MlaParts& parts);

// The KV head that query head h reads: ⌊h / (H / H_kv)⌋, as repeat_interleave.
int kv_head_of(const Problem& problem, int head);

// Positions of the query rows and key rows for RoPE: given, or 0 … n−1 aligned
// to the end of the keys when m > n (the queries are the last n tokens).
std::vector<double> query_positions(const Problem& problem);
std::vector<double> key_positions(const Problem& problem);

// RoPE's pair p of a head's d columns: its angle per position θ_p (base^(−2p/r) over
// the r rotary columns, or the given degrees, as resolved with the scaling), and its two
// columns (2p, 2p+1 interleaved; p, p + r/2 half); r = rotary_dims, d without partial rotary.
std::size_t rotary_dims(const Rope& rope, std::size_t d);
double rope_theta(const Rope& rope, std::size_t pair, std::size_t d);
std::array<std::size_t, 2> rope_pair(const Rope& rope, std::size_t pair, std::size_t d);

// x (rows, d_k) -> x rotated: pair p of row r turned by positions[r] · θ_p, cos and sin
// times the attention factor; columns past rotary_dims unchanged.
Matrix apply_rope(const Matrix& x, const Rope& rope, const std::vector<double>& positions, Dtype dtype);

// M (n, m) for one batch element and head: the masks, `lengths`, ALiBi.
Matrix head_mask(const Problem& problem, std::size_t batch, int head);
// Rows rows.first … of that M: (rows.count, m).
Matrix head_mask(const Problem& problem, std::size_t batch, int head, QueryRows rows);

// The steps of a row softmax over masked scores z (rows, cols):
// row_max (rows, 1), exp = e^(z − row_max) (rows, cols), row_sum (rows, 1), weights.
// Rows with no visible key follow the problem's empty-row policy; `empty_rows`
// receives their indices. Without `max_shift` exp = e^z (row_max is still the row's max,
// which finds the empty rows). With `mask`, the M in z, a row is empty when M blocks every
// key: a row whose scores all overflowed to −∞ in a half type reads keys the mask allows,
// and becomes 0/0 = NaN as the type's softmax makes it, not an empty row. Without it a
// row of −∞ is empty.
struct SoftmaxSteps {
    Matrix row_max, exp, row_sum, weights;
    std::vector<std::size_t> empty_rows;
};
SoftmaxSteps softmax_rows(const Matrix& masked, EmptyRows policy, Dtype dtype, bool max_shift = true, const Matrix* mask = nullptr);

// Dropout's keep (docs/FAMILY.md#dropout-on-the-weights-and-the-traineval-trap): 0 and 1,
// each 1 when the portable generator's draw u ≥ p. One stream seeded by the problem's
// seed runs over every (batch, head) in order, row-major within each, so the keep of a
// head does not depend on which rows are asked for. Asked in stream order (as the full
// pipeline asks) it only draws; asked out of order it starts the stream again and skips
// ahead.
class DropoutDraws {
public:
    explicit DropoutDraws(const Problem& problem);
    // (rows.count, m) for one batch element and head.
    Matrix keep(std::size_t batch, int head, QueryRows rows);

private:
    const Problem& p_;
    PortableRandom generator_;
    std::size_t position_ = 0;  // draws taken so far
};
// Dropout in train mode is traced by the full pipeline only: the others refuse it
// (InputError naming `what`) rather than silently computing eval mode.
void refuse_train_dropout(const Problem& problem, const std::string& what);
// weights ⊙ keep / (1 − p), in the dtype.
Matrix apply_dropout(const Matrix& weights, const Matrix& keep, double p, Dtype dtype);

// Element-wise a + b and s·a in the dtype.
Matrix add_elementwise(const Matrix& a, const Matrix& b, Dtype dtype);
Matrix scale(const Matrix& a, double s, Dtype dtype);
// c·tanh(a / c)
Matrix soft_cap(const Matrix& a, double cap, Dtype dtype);

// The trace's "problem" object and the notes every `run` trace carries (causal
// alignment when n ≠ m, which query heads share a KV head, a checkpoint rounded to the run's half type).
TraceSummary summarise_problem(const Problem& problem, Dtype dtype, const std::string& backend_name);
std::vector<Note> problem_notes(const Problem& problem, Dtype dtype);

// The labels of query rows and key rows ("damaged", "on", ... or empty).
const std::vector<std::string>& query_labels(const Problem& problem);
const std::vector<std::string>& key_labels(const Problem& problem);

// " in head 1 of batch 0": which head and sequence a message speaks of, each
// only where the problem has several.
std::string in_head_of_batch(const Problem& problem, int head, std::size_t batch);

// An error for a row that can read no key under the "error" policy.
[[noreturn]] void fail_empty_row(const Problem& problem, std::size_t row, int head, std::size_t batch);

}  // namespace attn_trace
