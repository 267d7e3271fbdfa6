// The fast path as a pipeline: projections, RoPE and masks as in the full trace
// (fused_inputs.hpp), the attention itself through the backend's fused kernel, and
// a trace of the steps that are O(n) per head.
#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "fused_inputs.hpp"
#include "pipeline_base.hpp"

namespace attn_trace {

namespace {

class FastPipeline : PipelineBase {
public:
    FastPipeline(const Problem& problem, const RunOptions& options, const FastPathOptions& fast) : PipelineBase(problem, options, "run"), fast_(fast) {}

    Trace run() {
        trace_.notes = problem_notes(p_, dtype_);
        AttentionStats stats;
        for (std::size_t b = 0; b < p_.batch; ++b) {
            const AttentionStats s = run_sequence(b);
            stats.tiles_computed += s.tiles_computed;
            stats.tiles_skipped += s.tiles_skipped;
            stats.score_bytes_held = s.score_bytes_held;
            stats.workers = s.workers;
            stats.block_q = s.block_q;
            stats.block_k = s.block_k;
        }
        trace_.notes.insert(trace_.notes.begin(), fast_path_note(stats));
        trace_.numbers = {{"scores_held", static_cast<double>(stats.score_bytes_held) / dtype_bytes(dtype_)},
                          {"tiles_computed", static_cast<double>(stats.tiles_computed)},
                          {"tiles_skipped", static_cast<double>(stats.tiles_skipped)}};
        return finish();
    }

private:
    Note fast_path_note(const AttentionStats& stats) const {
        const double bytes = dtype_bytes(dtype_);
        const double full_bytes = static_cast<double>(p_.batch) * p_.heads * static_cast<double>(p_.n) * static_cast<double>(p_.m) * bytes;
        return {NoteKind::fast_path,
                {{"block_q", static_cast<double>(stats.block_q)}, {"block_k", static_cast<double>(stats.block_k)}, {"workers", stats.workers},
                 {"held_bytes", static_cast<double>(stats.score_bytes_held)}, {"full_bytes", full_bytes}, {"n", static_cast<double>(p_.n)},
                 {"m", static_cast<double>(p_.m)}, {"d_v", static_cast<double>(p_.d_v)}},
                {{"reason", fast_.reason}, {"backend", backend_->name()}}};
    }

    void record(StepName name, std::string formula, Matrix values, int head, std::size_t batch) {
        steps_.record(name, std::move(formula), std::move(values), head, batch, query_labels(p_));
    }

    AttentionStats run_sequence(std::size_t b) {
        AttentionResult result = attend_sequence(b);
        // The kernel's out is concat; with one head and no W_O it is the head's out, moved
        // rather than copied (docs/PERFORMANCE.md#the-fast-paths-memory).
        const bool out_is_concat = p_.heads > 1 || p_.W_O;
        for (int h = 0; h < p_.heads; ++h) {
            const std::size_t hs = static_cast<std::size_t>(h);
            Matrix row_max = block_of(result.row_max, hs, 1, 0, p_.n).transposed(), row_sum = block_of(result.row_sum, hs, 1, 0, p_.n).transposed();
            std::vector<std::size_t> empty;
            for (std::size_t i = 0; i < p_.n; ++i)
                if (row_max(i, 0) == -std::numeric_limits<double>::infinity()) empty.push_back(i);
            steps_.note_empty_rows(empty, h, b);
            const int g = kv_head_of(p_, h);
            // Without a mask the softmax reads the scaled scores: the formula names them, not Z (docs/NOTATION.md).
            const bool unmasked = p_.masks.empty() && !p_.alibi_slopes && (p_.lengths.empty() || p_.lengths[b] == p_.m);
            const std::string z = !unmasked ? "Z" : p_.softcap ? "S_c" : "S_s";
            record(StepName::row_max, fmt::format("rowmax({}) (the running max m after the last tile)", z), std::move(row_max), h, b);
            record(StepName::row_sum, fmt::format("rowsum(exp({} − m)) (the running sum ℓ after the last tile)", z), std::move(row_sum), h, b);
            record(StepName::out, p_.kv_heads < p_.heads ? fmt::format("A V_{} = u / ℓ", g) : "A V = u / ℓ",
                   out_is_concat ? result.out.columns(hs * p_.d_v, p_.d_v) : std::move(result.out), h, b);
        }
        if (out_is_concat) steps_.record_concat_and_final(std::move(result.out), b, *backend_, dtype_);
        return result.stats;
    }

    // Projections, RoPE and masks for batch element b, then the backend's fused attention.
    AttentionResult attend_sequence(std::size_t b) {
        FusedInputs in(p_, b, *backend_, dtype_);
        in.call.threads = fast_.threads > 0 ? fast_.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        in.call.block_q = fast_.block_q;
        in.call.block_k = fast_.block_k;
        // Tiles as large as the pattern's blocks (64 … 256): each then lies in one block
        // pair, scored whole or skipped whole, with no pair to check.
        for (const auto& spec : p_.masks)
            if (spec.kind == MaskSpec::Kind::sparse && spec.sparse.block >= 64 && spec.sparse.block <= 256) {
                if (!fast_.block_q) in.call.block_q = spec.sparse.block;
                if (!fast_.block_k) in.call.block_k = spec.sparse.block;
            }
        return attend(*backend_, Operation::fused_attention, in.call);
    }

    FastPathOptions fast_;
};

}  // namespace

Trace pipeline_fast(const Problem& problem, const RunOptions& options, const FastPathOptions& fast) {
    refuse_train_dropout(problem, "the fast path");
    if (is_half(options.dtype))
        throw InputError(fmt::format("{}: the fast path computes in f64 or f32 only, and {} is traced step by step ({}); "
                                     "leave out ⟦fast⟧, or lower n, or use ⟦dtype⟧ f32",
                                     problem.file, dtype_name(options.dtype), fast.reason));
    return FastPipeline(problem, options, fast).run();
}

}  // namespace attn_trace
