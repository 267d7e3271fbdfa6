// decode's and tiled's weights put back together as whole (n, m) matrices, so
// that the pictures draw them as they draw run's.
#include "attn_trace/whole_weights.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

namespace attn_trace {

namespace {

using Head = std::pair<int, int>;  // (batch, head), -1 where unset
Head head_of(const Step& s) { return {s.batch.value_or(-1), s.head.value_or(-1)}; }

// One whole weights step being filled, with its labels gathered from the pieces.
struct Whole {
    Step step;
    std::vector<std::string> rows, cols;
    bool labelled = true;  // every piece carries token labels

    Whole(const Step& piece, const TraceSummary& p) : rows(p.n), cols(p.m) {
        step.name = StepName::weights;
        step.head = piece.head;
        step.batch = piece.batch;
        step.values = Matrix(p.n, p.m);
    }
    void put(const Step& piece, std::size_t row0, std::size_t col0) {
        labelled = labelled && !piece.row_labels.empty() && !piece.column_labels.empty();
        for (std::size_t r = 0; r < piece.row_labels.size(); ++r) rows[row0 + r] = piece.row_labels[r];
        for (std::size_t c = 0; c < piece.column_labels.size(); ++c) cols[col0 + c] = piece.column_labels[c];
    }
    // The labels only where every row and key had one (a row whose every tile was
    // skipped has none): else indices.
    Step finish(const std::string& formula) {
        const auto named = [](const std::vector<std::string>& labels) { return std::none_of(labels.begin(), labels.end(), [](const std::string& l) { return l.empty(); }); };
        step.formula = formula;
        if (labelled && named(rows) && named(cols)) step.row_labels = std::move(rows), step.column_labels = std::move(cols);
        return std::move(step);
    }
};

// A trace of the whole steps, with what the pictures read of the trace they come from.
Trace trace_of(const Trace& from, std::map<Head, Whole>& wholes, const std::string& formula) {
    Trace out;
    out.command = from.command;
    out.problem = from.problem;
    for (auto& [head, whole] : wholes) out.steps.push_back(whole.finish(formula));
    return out;
}

// decode: query t's weights row (a prefill block's rows) over the cache of keys
// 0 … t (+ the cache offset m − n): row t of the whole matrix, the rest 0.
Trace stacked_rows(const Trace& trace) {
    std::map<Head, Whole> wholes;
    const TraceSummary& p = trace.problem;
    for (const Step& s : trace.steps) {
        if (s.name != StepName::weights || !s.t) continue;
        Whole& whole = wholes.try_emplace(head_of(s), s, p).first->second;
        const std::size_t first = static_cast<std::size_t>(*s.t) + 1 - s.values.rows();
        for (std::size_t r = 0; r < s.values.rows(); ++r)
            for (std::size_t j = 0; j < s.values.cols(); ++j) whole.step.values(first + r, j) = s.values(r, j);
        whole.put(s, first, 0);
    }
    return trace_of(trace, wholes, "each step t's weights row, stacked (0 past the cache)");
}

// The tile step that holds S_ij = s · Q_i K_jᵀ + M_ij: named scores, or masked
// (S holds the mask M).
bool tile_scores(const Step& s) { return s.tile && (s.name == StepName::scores || s.name == StepName::masked); }

// tiled: per query block the last tile's m and ℓ are the rows' final max and sum,
// and each tile's weights are exp(S_ij − m_i) / ℓ_i, as the output u / ℓ uses them.
Trace tile_weights(const Trace& trace, const Note& tiled) {
    const auto Br = static_cast<std::size_t>(tiled.number("block_q")), Bc = static_cast<std::size_t>(tiled.number("block_k"));
    using Block = std::tuple<int, int, int>;  // (batch, head, query block)
    std::map<Block, std::pair<const Step*, const Step*>> last;  // its last m and ℓ
    for (const Step& s : trace.steps) {
        if (!s.tile) continue;
        const Block block{s.batch.value_or(-1), s.head.value_or(-1), (*s.tile)[0]};
        if (s.name == StepName::m) last[block].first = &s;
        if (s.name == StepName::l) last[block].second = &s;
    }
    std::map<Head, Whole> wholes;
    for (const Step& s : trace.steps) {
        if (!tile_scores(s)) continue;
        const auto [m, l] = last.at({s.batch.value_or(-1), s.head.value_or(-1), (*s.tile)[0]});
        Whole& whole = wholes.try_emplace(head_of(s), s, trace.problem).first->second;
        const std::size_t i0 = static_cast<std::size_t>((*s.tile)[0]) * Br, j0 = static_cast<std::size_t>((*s.tile)[1]) * Bc;
        for (std::size_t r = 0; r < s.values.rows(); ++r) {
            // A row that has read no key (m = −∞, ℓ = 0) has no weights: 0, as the empty-row policy's output.
            const double row_max = m->values(r, 0), row_sum = l->values(r, 0);
            for (std::size_t c = 0; c < s.values.cols(); ++c)
                whole.step.values(i0 + r, j0 + c) = std::isfinite(row_max) && row_sum > 0 ? std::exp(s.values(r, c) - row_max) / row_sum : 0.0;
        }
        whole.put(s, i0, j0);
    }
    return trace_of(trace, wholes, "exp(S_ij − m_i) / ℓ_i with the last tile's m and ℓ (0 in a skipped tile)");
}

}  // namespace

std::optional<Trace> whole_weights(const Trace& trace) {
    const bool rows = std::any_of(trace.steps.begin(), trace.steps.end(), [](const Step& s) { return s.name == StepName::weights && s.t; });
    if (rows) return stacked_rows(trace);
    const auto tiled = trace.notes_of(NoteKind::tiled);
    const bool tiles = std::any_of(trace.steps.begin(), trace.steps.end(), tile_scores);
    if (!tiled.empty() && tiles) return tile_weights(trace, *tiled.front());
    return std::nullopt;
}

}  // namespace attn_trace
