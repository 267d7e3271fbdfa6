#pragma once
// What the step-by-step pipelines (decode, tiled) share on top of
// attention_parts: recording steps, one head's q, k, v, blocks of a matrix, the
// concat/final steps of docs/COMMANDS.md#run, and the comparison with the full computation.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "attn_trace/attention_parts.hpp"
#include "attn_trace/pipeline.hpp"

namespace attn_trace {

// Appends steps to a trace, with the batch index on batched problems.
class StepRecorder {
public:
    StepRecorder(const Problem& problem, Trace& trace) : p_(problem), trace_(trace) {}

    Step& record(StepName name, std::string formula, Matrix values, std::optional<int> head, std::size_t batch,
                 std::vector<std::string> rows = {}, std::vector<std::string> columns = {});

    // outs: H matrices (n, d_v). Records concat [O_0 … O_{H−1}] (n, H·d_v) and
    // final = concat W_O + b_O, where docs/COMMANDS.md#run has them (H > 1, or W_O given).
    // With outs of fewer rows (explain), they are the query rows from first_row on.
    void record_concat_and_final(const std::vector<Matrix>& outs, std::size_t batch, const Backend& backend, Dtype dtype,
                                 std::size_t first_row = 0);
    // The same from the heads' outputs already side by side (a fused kernel's result).
    void record_concat_and_final(Matrix concat, std::size_t batch, const Backend& backend, Dtype dtype, std::size_t first_row = 0);

    // Rows (query indices) of one head that read no key: an error under the
    // "error" policy, otherwise a note saying what the policy made of them.
    void note_empty_rows(const std::vector<std::size_t>& rows, int head, std::size_t batch);

private:
    const Problem& p_;
    Trace& trace_;
};

// Query head h's q (n, d_k) and its KV head's k (m, d_k) and v (m, d_v), RoPE applied.
struct HeadInputs {
    Matrix q, k, v;
};
// projections.q may hold only the query rows from first_query_row on (see QueryRows):
// each is turned by its own position.
HeadInputs head_inputs(const Problem& problem, const Projections& projections, int head, Dtype dtype, std::size_t first_query_row = 0);

// a (rows, cols) -> a[first_row : first_row+row_count, first_col : first_col+col_count]
Matrix block_of(const Matrix& a, std::size_t first_row, std::size_t row_count, std::size_t first_col, std::size_t col_count);

// labels[first : first+count], or none when there are no labels.
std::vector<std::string> slice_labels(const std::vector<std::string>& labels, std::size_t first, std::size_t count);

// The largest |got − want| over the `out` (per head and batch), `concat` and
// `final` steps that carry neither t nor tile. Equal non-finite values (NaN and
// NaN, −∞ and −∞) differ by 0; a non-finite value against anything else by ∞.
double max_abs_diff_vs(const Trace& got, const Trace& reference);

}  // namespace attn_trace
