// The fast path as a pipeline: projections, RoPE and masks as in the full trace
// (attention_parts), the attention itself through the backend's fused kernel, and
// a trace of the steps that are O(n) per head.
#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "pipeline_base.hpp"

namespace attn_trace {

namespace {

// x (rows, heads·d) -> every head's columns turned by RoPE.
Matrix rotate_heads(const Matrix& x, int heads, std::size_t d, const Rope& rope, const std::vector<double>& positions, Dtype dtype) {
    Matrix out(x.rows(), x.cols());
    for (int h = 0; h < heads; ++h) {
        const std::size_t first = static_cast<std::size_t>(h) * d;
        const Matrix rotated = apply_rope(x.columns(first, d), rope, positions, dtype);
        for (std::size_t i = 0; i < x.rows(); ++i) std::copy(rotated.row(i), rotated.row(i) + d, out.row(i) + first);
    }
    return out;
}

// The masks of one batch element in the kernels' form (see KeyMask): causal,
// window and `lengths` become each row's key range; key_valid a key flag; the
// dense specs their (n, m) sum via build_mask; ALiBi its slopes; sparse patterns
// go as they are (the kernel asks them tile by tile). Null when nothing is masked.
std::optional<KeyMask> key_mask(const Problem& p, std::size_t batch) {
    KeyMask mask;
    const std::size_t key_length = p.lengths.empty() ? p.m : p.lengths[batch];
    bool ranged = key_length < p.m;
    std::vector<MaskSpec> dense_specs;
    for (const auto& spec : p.masks) {
        if (spec.is_key_range()) ranged = true;
        if (spec.needs_shape()) dense_specs.push_back(spec);
        if (spec.kind == MaskSpec::Kind::sparse) mask.patterns.push_back(spec.sparse);
        if (spec.kind == MaskSpec::Kind::key_valid) {
            mask.key_valid.resize(p.m, 1);
            for (std::size_t j = 0; j < p.m; ++j) mask.key_valid[j] = mask.key_valid[j] && spec.key_valid[j];
        }
    }
    if (ranged) {
        mask.first_key.resize(p.n);
        mask.end_key.resize(p.n);
        for (std::size_t i = 0; i < p.n; ++i) {
            long first = 0, end = static_cast<long>(key_length);
            for (const auto& spec : p.masks) {
                if (!spec.is_key_range()) continue;
                const KeyRange range = key_range(spec, i, p.n, p.m);
                first = std::max(first, range.first);
                end = std::min(end, range.end);
            }
            first = std::clamp(first, 0L, static_cast<long>(p.m));
            mask.first_key[i] = static_cast<std::size_t>(first);
            mask.end_key[i] = static_cast<std::size_t>(std::clamp(end, first, static_cast<long>(p.m)));
        }
    }
    if (!dense_specs.empty()) mask.dense = build_mask(dense_specs, p.n, p.m, p.m, 0.0);
    if (p.alibi_slopes) mask.alibi_slopes = *p.alibi_slopes;
    if (!ranged && !mask.has_elementwise()) return std::nullopt;
    return mask;
}

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
        const AttentionResult result = attend_sequence(b);
        std::vector<Matrix> outs;
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
            outs.push_back(result.out.columns(hs * p_.d_v, p_.d_v));
            record(StepName::out, p_.kv_heads < p_.heads ? fmt::format("A V_{} = u / ℓ", g) : "A V = u / ℓ", outs.back(), h, b);
        }
        steps_.record_concat_and_final(outs, b, *backend_, dtype_);
        return result.stats;
    }

    // Projections, RoPE and masks for batch element b, then the backend's fused attention.
    AttentionResult attend_sequence(std::size_t b) {
        // Q, K, V given in the file are read where they are: project() would copy
        // them, and at n = 65536 a copy of three (n, 64) double matrices is 96 MB.
        Projections projected;
        if (p_.from_tokens()) projected = project(p_, b, *backend_, dtype_);
        const Matrix& q_given = p_.from_tokens() ? projected.q : *p_.Q;
        const Matrix& k_given = p_.from_tokens() ? projected.k : *p_.K;
        const Matrix& v = p_.from_tokens() ? projected.v : *p_.V;
        Matrix q_rotated, k_rotated;
        if (p_.rope) {
            q_rotated = rotate_heads(q_given, p_.heads, p_.d_k, *p_.rope, query_positions(p_), dtype_);
            k_rotated = rotate_heads(k_given, p_.kv_heads, p_.d_k, *p_.rope, key_positions(p_), dtype_);
        }
        const std::optional<KeyMask> mask = key_mask(p_, b);
        AttentionCall call;
        call.q = p_.rope ? &q_rotated : &q_given;
        call.k = p_.rope ? &k_rotated : &k_given;
        call.v = &v;
        call.d_k = p_.d_k;
        call.d_v = p_.d_v;
        call.heads = p_.heads;
        call.kv_heads = p_.kv_heads;
        call.scale = p_.scale_factor();
        call.softcap = p_.softcap;
        call.mask = mask ? &*mask : nullptr;
        call.dtype = dtype_;
        call.empty_rows_nan = p_.empty_rows == EmptyRows::nan;
        call.threads = fast_.threads > 0 ? fast_.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        call.block_q = fast_.block_q;
        call.block_k = fast_.block_k;
        // Tiles as large as the pattern's blocks (64 … 256): each then lies in one block
        // pair, scored whole or skipped whole, with no pair to check.
        for (const auto& spec : p_.masks)
            if (spec.kind == MaskSpec::Kind::sparse && spec.sparse.block >= 64 && spec.sparse.block <= 256) {
                if (!fast_.block_q) call.block_q = spec.sparse.block;
                if (!fast_.block_k) call.block_k = spec.sparse.block;
            }
        return attend(*backend_, Operation::fused_attention, call);
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
