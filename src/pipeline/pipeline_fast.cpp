// The fast path as a pipeline: projections, RoPE and masks as in the full trace
// (attention_parts), the attention itself through the fused tiled kernel, and a
// trace of the steps that are O(n) per head.
#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "attention_parts.hpp"
#include "overflow.hpp"
#include "stepwise_parts.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/fast_attention.hpp"
#include "attn_trace/pipeline_fast.hpp"

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

// The masks of one batch element in the kernel's form (see FastMask): causal,
// window and `lengths` become each row's key range; key_valid a key flag; the
// dense specs their (n, m) sum via build_mask; ALiBi its slopes. Null when nothing is masked.
std::optional<FastMask> fast_mask(const Problem& p, std::size_t batch) {
    FastMask mask;
    const std::size_t key_length = p.lengths.empty() ? p.m : p.lengths[batch];
    const long offset = static_cast<long>(p.m) - static_cast<long>(p.n);  // query i sits at key position i + offset (bottom-right)
    bool ranged = key_length < p.m;
    std::vector<MaskSpec> dense_specs;
    for (const auto& spec : p.masks) {
        if (spec.is_causal() || spec.kind == MaskSpec::Kind::window) ranged = true;
        if (spec.needs_shape()) dense_specs.push_back(spec);
        if (spec.kind == MaskSpec::Kind::key_valid) {
            mask.key_valid.resize(p.m, 1);
            for (std::size_t j = 0; j < p.m; ++j) mask.key_valid[j] = mask.key_valid[j] && spec.key_valid[j];
        }
    }
    if (ranged) {
        mask.first_key.resize(p.n);
        mask.end_key.resize(p.n);
        for (std::size_t i = 0; i < p.n; ++i) {
            const long row = static_cast<long>(i) + offset;
            long first = 0, end = static_cast<long>(key_length);
            for (const auto& spec : p.masks) {
                if (spec.kind == MaskSpec::Kind::causal_upper_left) end = std::min(end, static_cast<long>(i) + 1);  // j ≤ i
                if (spec.kind == MaskSpec::Kind::causal_bottom_right) end = std::min(end, row + 1);  // j ≤ i + (m − n)
                if (spec.kind == MaskSpec::Kind::window) {  // row − left ≤ j ≤ row + right
                    first = std::max(first, row - spec.window_left);
                    end = std::min(end, row + spec.window_right + 1);
                }
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

// The kernel's results for one batch element, as the trace's matrices.
struct SequenceResult {
    Matrix concat;                          // (n, H·d_v)
    std::vector<Matrix> row_max, row_sum;   // per head (n, 1)
    FastAttentionStats stats;
};

class FastPipeline {
public:
    FastPipeline(const Problem& problem, const RunOptions& options, const FastPathOptions& fast)
        : p_(problem), dtype_(options.dtype), backend_(make_backend(options.backend)), fast_(fast) {
        settings_.threads = fast.threads > 0 ? fast.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        if (fast.block_q) settings_.block_q = fast.block_q;
        if (fast.block_k) settings_.block_k = fast.block_k;
    }

    Trace run() {
        trace_.command = "run";
        trace_.problem = summarise_problem(p_, dtype_, backend_->name());
        trace_.notes = problem_notes(p_);
        FastAttentionStats stats;
        for (std::size_t b = 0; b < p_.batch; ++b) {
            const FastAttentionStats s = run_sequence(b);
            stats.tiles_computed += s.tiles_computed;
            stats.tiles_skipped += s.tiles_skipped;
            stats.score_bytes_held = s.score_bytes_held;
            stats.workers = s.workers;
            stats.block_q = s.block_q;
            stats.block_k = s.block_k;
        }
        trace_.notes.insert(trace_.notes.begin(), fast_path_note(stats));
        check_overflow(trace_, p_, dtype_);
        trace_.numbers = {{"scores_held", static_cast<double>(stats.score_bytes_held / (dtype_ == Dtype::f32 ? 4 : 8))},
                          {"tiles_skipped", static_cast<double>(stats.tiles_skipped)}};
        return std::move(trace_);
    }

private:
    std::string fast_path_note(const FastAttentionStats& stats) const {
        const std::size_t bytes = dtype_ == Dtype::f32 ? 4 : 8;
        const double full_bytes = static_cast<double>(p_.batch) * p_.heads * static_cast<double>(p_.n) * static_cast<double>(p_.m) * bytes;
        return fmt::format(
            "fast path{}: fused tiled attention with online softmax (Br = {} queries × Bc = {} keys per tile, {} thread{}); "
            "it held {:.3g} MiB of scores at once, where the (n, m) scores of every head would take {:.3g} GiB. Shapes per head: "
            "scores, mask, exp and weights ({}, {}) are not kept; row_max and row_sum ({}, 1) are the final running max m and sum ℓ; "
            "out ({}, {})",
            fast_.reason.empty() ? "" : " (" + fast_.reason + ")", stats.block_q, stats.block_k,
            stats.workers, stats.workers == 1 ? "" : "s", static_cast<double>(stats.score_bytes_held) / (1 << 20),
            full_bytes / (1 << 30), p_.n, p_.m, p_.n, p_.n, p_.d_v);
    }

    void record(std::string name, std::string formula, Matrix values, std::optional<int> head, std::size_t batch) {
        steps_.record(std::move(name), std::move(formula), std::move(values), head, batch, query_labels(p_));
    }

    FastAttentionStats run_sequence(std::size_t b) {
        SequenceResult result = dtype_ == Dtype::f32 ? attend<float>(b) : attend<double>(b);
        for (int h = 0; h < p_.heads; ++h) {
            const std::size_t hs = static_cast<std::size_t>(h);
            check_empty_rows(result.row_max[hs], h, b);
            const int g = kv_head_of(p_, h);
            record("row_max", "max_j masked (the running max m after the last tile)", std::move(result.row_max[hs]), h, b);
            record("row_sum", "Σ_j exp (the running sum ℓ after the last tile)", std::move(result.row_sum[hs]), h, b);
            record("out", p_.kv_heads < p_.heads ? fmt::format("A V_{} = u / ℓ", g) : "A V = u / ℓ", result.concat.columns(hs * p_.d_v, p_.d_v), h, b);
        }
        if (p_.heads > 1 || p_.W_O) {
            if (p_.W_O) {
                Matrix final_out = affine(result.concat, *p_.W_O, p_.b_O, *backend_, dtype_);
                record("concat", p_.heads > 1 ? fmt::format("[O_0 … O_{}]", p_.heads - 1) : "O_0", std::move(result.concat), std::nullopt, b);
                record("final", p_.b_O ? "concat W_O + b_O" : "concat W_O", std::move(final_out), std::nullopt, b);
            } else {
                record("concat", fmt::format("[O_0 … O_{}]", p_.heads - 1), std::move(result.concat), std::nullopt, b);
            }
        }
        return result.stats;
    }

    void check_empty_rows(const Matrix& row_max, int h, std::size_t b) {
        std::size_t empty = 0;
        for (std::size_t i = 0; i < row_max.rows(); ++i)
            if (row_max(i, 0) == -std::numeric_limits<double>::infinity()) {
                if (p_.empty_rows == EmptyRows::error) fail_empty_row(p_, i, h, b);
                ++empty;
            }
        if (empty > 0)
            trace_.notes.push_back(fmt::format("{} row{} with no visible key{}{}: empty_rows = {} (out is {})", empty, empty == 1 ? "" : "s",
                                               p_.heads > 1 ? fmt::format(" in head {}", h) : "", p_.batched ? fmt::format(" of batch {}", b) : "",
                                               empty_rows_name(p_.empty_rows), p_.empty_rows == EmptyRows::zero ? "0" : "NaN"));
    }

    // Projections, RoPE and masks for batch element b, then the kernel in T.
    template <typename T>
    SequenceResult attend(std::size_t b) {
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
        const Matrix& q = p_.rope ? q_rotated : q_given;
        const Matrix& k = p_.rope ? k_rotated : k_given;
        const std::optional<FastMask> mask = fast_mask(p_, b);

        const std::size_t heads = static_cast<std::size_t>(p_.heads);
        std::vector<T> out(p_.n * heads * p_.d_v), row_max(heads * p_.n), row_sum(heads * p_.n);
        SequenceResult result;
        {
            FastAttentionInput<T, double> input;  // the kernel reads the double matrices in place, rounding to T as it packs them
            input.q = q.data().data();
            input.k = k.data().data();
            input.v = v.data().data();
            input.q_stride = q.cols();
            input.k_stride = k.cols();
            input.v_stride = v.cols();
            input.n = p_.n;
            input.m = p_.m;
            input.d_k = p_.d_k;
            input.d_v = p_.d_v;
            input.heads = p_.heads;
            input.kv_heads = p_.kv_heads;
            input.scale = p_.scale_factor();
            input.softcap = p_.softcap;
            input.mask = mask ? &*mask : nullptr;
            const FastAttentionOutput<T> output{out.data(), row_max.data(), row_sum.data(),
                                                p_.empty_rows == EmptyRows::nan ? std::numeric_limits<T>::quiet_NaN() : T(0)};
            result.stats = fast_attention(input, output, settings_);
        }
        result.concat = Matrix(p_.n, heads * p_.d_v);
        std::copy(out.begin(), out.end(), result.concat.data().begin());
        for (std::size_t h = 0; h < heads; ++h) {
            result.row_max.emplace_back(p_.n, 1);
            result.row_sum.emplace_back(p_.n, 1);
            std::copy_n(row_max.begin() + static_cast<long>(h * p_.n), p_.n, result.row_max.back().data().begin());
            std::copy_n(row_sum.begin() + static_cast<long>(h * p_.n), p_.n, result.row_sum.back().data().begin());
        }
        return result;
    }

    const Problem& p_;
    Dtype dtype_;
    std::unique_ptr<Backend> backend_;
    FastPathOptions fast_;
    FastAttentionSettings settings_;
    Trace trace_;
    StepRecorder steps_{p_, trace_};
};

}  // namespace

Trace pipeline_fast(const Problem& problem, const RunOptions& options, const FastPathOptions& fast) {
    return FastPipeline(problem, options, fast).run();
}

}  // namespace attn_trace
