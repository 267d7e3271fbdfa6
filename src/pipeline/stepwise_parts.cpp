#include "stepwise_parts.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "attn_trace/compare.hpp"

namespace attn_trace {

Step& StepRecorder::record(StepName name, std::string formula, Matrix values, std::optional<int> head, std::size_t batch,
                           std::vector<std::string> rows, std::vector<std::string> columns) {
    Step step;
    step.name = name;
    step.formula = std::move(formula);
    step.values = std::move(values);
    step.head = head;
    if (p_.batched) step.batch = static_cast<int>(batch);
    step.row_labels = std::move(rows);
    step.column_labels = std::move(columns);
    trace_.steps.push_back(std::move(step));
    return trace_.steps.back();
}

void StepRecorder::record_concat_and_final(const std::vector<Matrix>& outs, std::size_t batch, const Backend& backend, Dtype dtype,
                                           std::size_t first_row) {
    if (p_.heads == 1 && !p_.W_O) return;
    const std::size_t d_v = p_.d_v, rows = outs.front().rows();
    Matrix concat(rows, outs.size() * d_v);
    for (std::size_t h = 0; h < outs.size(); ++h)
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < d_v; ++j) concat(i, h * d_v + j) = outs[h](i, j);
    record_concat_and_final(std::move(concat), batch, backend, dtype, first_row);
}

void StepRecorder::record_concat_and_final(Matrix concat, std::size_t batch, const Backend& backend, Dtype dtype, std::size_t first_row) {
    if (p_.heads == 1 && !p_.W_O) return;
    const auto labels = slice_labels(query_labels(p_), first_row, concat.rows());
    Matrix final_out;
    if (p_.W_O) final_out = affine(concat, *p_.W_O, p_.b_O, backend, dtype);
    record(StepName::concat, p_.heads > 1 ? fmt::format("[O_0 … O_{}]", p_.heads - 1) : "O_0", std::move(concat), std::nullopt, batch, labels);
    if (p_.W_O) record(StepName::final, p_.b_O ? "O_cat W_O + b_O" : "O_cat W_O", std::move(final_out), std::nullopt, batch, labels);
}

void StepRecorder::note_empty_rows(const std::vector<std::size_t>& rows, int head, std::size_t batch) {
    if (rows.empty()) return;
    if (p_.empty_rows == EmptyRows::error) fail_empty_row(p_, rows.front(), head, batch);
    Note note{NoteKind::empty_rows, {{"rows", static_cast<double>(rows.size())}}, {{"policy", empty_rows_name(p_.empty_rows)}}};
    if (p_.heads > 1) note.numbers["head"] = head;
    if (p_.batched) note.numbers["batch"] = static_cast<double>(batch);
    trace_.notes.push_back(std::move(note));
}

HeadInputs head_inputs(const Problem& p, const Projections& projections, int head, Dtype dtype, std::size_t first_query_row) {
    const std::size_t h = static_cast<std::size_t>(head), g = static_cast<std::size_t>(kv_head_of(p, head));
    HeadInputs in{projections.q.columns(h * p.d_k, p.d_k), projections.k.columns(g * p.d_k, p.d_k), projections.v.columns(g * p.d_v, p.d_v)};
    if (p.rope) {
        // RoPE turns each row by its own position only, so rotating every row
        // up front equals rotating each key as it enters the cache.
        const auto positions = query_positions(p);
        const auto first = positions.begin() + static_cast<long>(first_query_row);
        in.q = apply_rope(in.q, *p.rope, std::vector<double>(first, first + static_cast<long>(in.q.rows())), dtype);
        in.k = apply_rope(in.k, *p.rope, key_positions(p), dtype);
    }
    return in;
}

Matrix block_of(const Matrix& a, std::size_t first_row, std::size_t row_count, std::size_t first_col, std::size_t col_count) {
    Matrix out(row_count, col_count);
    for (std::size_t i = 0; i < row_count; ++i)
        for (std::size_t j = 0; j < col_count; ++j) out(i, j) = a(first_row + i, first_col + j);
    return out;
}

std::vector<std::string> slice_labels(const std::vector<std::string>& labels, std::size_t first, std::size_t count) {
    if (labels.size() < first + count) return {};
    return {labels.begin() + static_cast<long>(first), labels.begin() + static_cast<long>(first + count)};
}

double max_abs_diff_vs(const Trace& got, const Trace& reference) {
    double largest = 0.0;
    for (const Step& step : got.steps) {
        if (step.t || step.tile || (step.name != StepName::out && step.name != StepName::concat && step.name != StepName::final)) continue;
        const Step* want = reference.find(step.name, step.head, step.batch, std::nullopt, std::nullopt);
        if (!want || want->values.rows() != step.values.rows() || want->values.cols() != step.values.cols())
            return std::numeric_limits<double>::infinity();
        for (std::size_t k = 0; k < step.values.data().size(); ++k)
            largest = std::max(largest, value_difference(step.values.data()[k], want->values.data()[k]));
    }
    return largest;
}

}  // namespace attn_trace
