// The full trace (docs/COMMANDS.md#run): every intermediate of every head of every sequence.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn_trace/compare.hpp"
#include "attn_trace/pipeline.hpp"
#include "pipeline_base.hpp"
#include "sparse_facts.hpp"

namespace attn_trace {

namespace {

std::string describe_number(double x) { return fmt::format("{:.6g}", x); }

// "(q columns 2…3, k columns 2…3)": which columns of the side-by-side q, k, v a
// head's step reads, so a table labelled "head 1" says where its numbers come from.
std::string columns_read(const Problem& p, int head, bool values) {
    if (p.heads == 1) return "";
    const std::size_t h = static_cast<std::size_t>(head), g = static_cast<std::size_t>(kv_head_of(p, head));
    if (values) return fmt::format(" (v columns {}…{})", g * p.d_v, (g + 1) * p.d_v - 1);
    return fmt::format(" (q columns {}…{}, k columns {}…{})", h * p.d_k, (h + 1) * p.d_k - 1, g * p.d_k, (g + 1) * p.d_k - 1);
}

class FullPipeline : PipelineBase {
public:
    FullPipeline(const Problem& problem, const RunOptions& options, QueryRows rows)
        : PipelineBase(problem, options, "run"), rows_(rows), queries_(slice_labels(query_labels(problem), rows.first, rows.count)) {}

    Trace run() {
        trace_.notes = problem_notes(p_, dtype_);
        if (has_sparse_pattern(p_)) pattern_ = pattern_facts(p_);
        for (std::size_t b = 0; b < p_.batch; ++b) run_sequence(b);
        if (pattern_) {
            trace_.numbers.push_back({"scored_pairs", static_cast<double>(pattern_->scored_pairs)});
            trace_.numbers.push_back({"density", pattern_->density});
            if (pattern_->reach) trace_.numbers.push_back({"reach_max", pattern_->reach_max});
        }
        if (drawn_ > 0) trace_.numbers.push_back({"kept_share", kept_ / drawn_});
        if (p_.mla) trace_.numbers.push_back({"max_abs_diff_absorbed", absorbed_diff_});
        return finish();
    }

    // One sequence, no notes: what explain reads.
    Trace run_one(std::size_t b) {
        if (has_sparse_pattern(p_)) pattern_ = pattern_facts(p_);
        run_sequence(b, false);
        return finish();
    }

private:
    // in_order: q, k, v recorded before the heads, as `run` prints them. Otherwise
    // (explain, which finds steps by name) after, moved rather than copied: with
    // m = 65 536 keys every copy of K or V is tens of megabytes.
    void run_sequence(std::size_t b, bool in_order = true) {
        const auto& queries = queries_;
        const auto& keys = key_labels(p_);
        if (p_.from_tokens()) {
            steps_.record(StepName::x, "(the input, one row per token)", block_of(p_.X[b], rows_.first, rows_.count, 0, p_.d_model), std::nullopt, b, queries);
            if (p_.cross_attention()) steps_.record(StepName::x_source, "(the source, one row per token)", p_.X_source[b], std::nullopt, b, p_.source_tokens);
        }
        if (p_.mla) mla_ = mla_parts(p_, b, *backend_, dtype_, rows_);
        Projections qkv = p_.mla ? mla_projections(p_, *mla_) : project(p_, b, *backend_, dtype_, rows_);
        const bool projected = p_.from_tokens();
        const std::string source = p_.cross_attention() ? "X_source" : "X";
        const auto record_projections = [&](bool move) {
            if (p_.mla) return record_mla_parts(b);
            const auto take = [move](Matrix& m) { return move ? std::move(m) : m; };
            const bool normed = p_.qk_norm.has_value();  // q and k hold the normed ones, q_raw and k_raw the projections
            steps_.record(StepName::q, projected ? (p_.b_Q ? "X W_Q + b_Q" : "X W_Q") : "(given)", take(normed ? qkv.q_raw : qkv.q), std::nullopt, b, queries);
            steps_.record(StepName::k, projected ? source + (p_.b_K ? " W_K + b_K" : " W_K") : "(given)", take(normed ? qkv.k_raw : qkv.k), std::nullopt, b, keys);
            steps_.record(StepName::v, projected ? source + (p_.b_V ? " W_V + b_V" : " W_V") : "(given)", take(qkv.v), std::nullopt, b, keys);
            if (!normed) return;
            const QkNorm& norm = *p_.qk_norm;
            const std::string how = fmt::format("{} / √(mean({}²) + {}) · {}, the mean over {}", "{0}", "{0}", describe_number(norm.eps),
                                                norm.weight_offset != 0 ? "(1 + w)" : "w", norm.per_head ? "each head's d_k columns" : "the whole row");
            steps_.record(StepName::q_normed, fmt::format(fmt::runtime(how), "Q"), take(qkv.q), std::nullopt, b, queries);
            steps_.record(StepName::k_normed, fmt::format(fmt::runtime(how), "K"), take(qkv.k), std::nullopt, b, keys);
        };
        if (in_order) record_projections(false);
        std::vector<Matrix> outs;
        if (p_.heads == 1 && !p_.rope) {
            // One head reads every column of q, k and v, unrotated: lend them to the
            // head rather than copy them (at m = 65 536, K and V are 67 MB).
            HeadInputs in{std::move(qkv.q), std::move(qkv.k), std::move(qkv.v)};
            outs.push_back(run_head(in, 0, b));
            // Member by member: an aggregate assignment would empty q_raw and k_raw (qk-norm's
            // projections), which the q and k steps are recorded from.
            qkv.q = std::move(in.q);
            qkv.k = std::move(in.k);
            qkv.v = std::move(in.v);
        } else {
            for (int h = 0; h < p_.heads; ++h) outs.push_back(run_head(head_inputs(p_, qkv, h, dtype_, rows_.first), h, b));
        }
        if (!in_order) record_projections(true);
        steps_.record_concat_and_final(outs, b, *backend_, dtype_, rows_.first);
    }

    // MLA's own steps (docs/FAMILY.md#mla-multi-head-latent-attention-deepseek-v2) in
    // place of q, k, v: the pipeline's q and k are their [content, rope] concatenations,
    // which nobody needs to read.
    void record_mla_parts(std::size_t b) {
        const auto& queries = queries_;
        const auto& keys = key_labels(p_);
        const std::string source = p_.cross_attention() ? "X_source" : "X";
        const MlaParts& parts = *mla_;
        const bool kv_normed = p_.mla->c_kv_norm.has_value(), q_normed = p_.mla->c_q_norm.has_value();
        steps_.record(StepName::c_kv, source + (kv_normed ? " W_DKV: the latent, before its norm" : " W_DKV: the latent, all that is cached for the content"),
                      kv_normed ? parts.c_kv_raw : parts.c_kv, std::nullopt, b, keys);
        if (kv_normed)
            steps_.record(StepName::c_kv_normed, fmt::format("C_KV / √(mean(C_KV²) + {}) · w: the latent the keys and values expand, all that is cached", describe_number(p_.mla->c_kv_norm->eps)),
                          parts.c_kv, std::nullopt, b, keys);
        if (!parts.c_q.empty()) steps_.record(StepName::c_q, "X W_DQ: the compressed query", q_normed ? parts.c_q_raw : parts.c_q, std::nullopt, b, queries);
        if (q_normed)
            steps_.record(StepName::c_q_normed, fmt::format("C_Q / √(mean(C_Q²) + {}) · w", describe_number(p_.mla->c_q_norm->eps)), parts.c_q, std::nullopt, b, queries);
        steps_.record(StepName::q, parts.c_q.empty() ? (p_.b_Q ? "X W_Q + b_Q" : "X W_Q") : q_normed ? "C_Q,n W_UQ" : "C_Q W_UQ", parts.q, std::nullopt, b, queries);
        steps_.record(StepName::k, "C_KV W_UK", parts.k, std::nullopt, b, keys);
        steps_.record(StepName::v, "C_KV W_UV", parts.v, std::nullopt, b, keys);
        if (p_.mla->d_r == 0) return;
        steps_.record(StepName::q_rope, fmt::format("RoPE({} W_QR), per head", parts.c_q.empty() ? "X" : "C_Q"), parts.q_rope, std::nullopt, b, queries);
        steps_.record(StepName::k_rope, fmt::format("RoPE({} W_KR), one for every head", source), parts.k_rope, std::nullopt, b, keys);
    }

    // The absorbed form of head h: q_latent = q_h W_UK,hᵀ (n, d_c), and
    // q_latent c_kvᵀ (+ q_rope_h k_ropeᵀ) against the scores the heads computed.
    void record_absorbed(int h, std::size_t b, const Matrix& scores) {
        const MlaParts& parts = *mla_;
        const Mla& mla = *p_.mla;
        const std::size_t first = static_cast<std::size_t>(h) * mla.d_content;
        const Matrix q_h = parts.q.columns(first, mla.d_content);
        const Matrix q_latent = backend_->multiply_transposed(q_h, mla.W_UK.columns(first, mla.d_content), dtype_);
        Matrix absorbed = backend_->multiply_transposed(q_latent, parts.c_kv, dtype_);
        if (mla.d_r) absorbed = add_elementwise(absorbed, backend_->multiply_transposed(parts.q_rope.columns(static_cast<std::size_t>(h) * mla.d_r, mla.d_r),
                                                                                        parts.k_rope, dtype_), dtype_);
        for (std::size_t i = 0; i < absorbed.data().size(); ++i)
            absorbed_diff_ = std::max(absorbed_diff_, value_difference(absorbed.data()[i], scores.data()[i]));
        steps_.record(StepName::q_latent, "Q_h W_UK,hᵀ: the query in latent space (absorbed form)", q_latent, h, b, queries_);
    }

    // One head: scores → scaled → (capped) → mask → masked → softmax steps → out.
    Matrix run_head(const HeadInputs& in, int h, std::size_t b) {
        const auto& queries = queries_;
        const auto& keys = key_labels(p_);
        const int g = kv_head_of(p_, h);
        if (p_.rope) {
            steps_.record(StepName::q_rot, "RoPE(Q)", in.q, h, b, queries);
            steps_.record(StepName::k_rot, "RoPE(K)", in.k, h, b, keys);
        }
        const std::string k_name = p_.kv_heads < p_.heads ? fmt::format("K_{}", g) : "K";
        const Matrix scores = backend_->multiply_transposed(in.q, in.k, dtype_);
        if (p_.mla) {
            record_absorbed(h, b, scores);
            steps_.record(StepName::scores, p_.mla->d_r ? "Q_h K_hᵀ + Q_R,h K_Rᵀ" : "Q_h K_hᵀ", scores, h, b, queries, keys);
        } else {
            steps_.record(StepName::scores, "Q " + k_name + "ᵀ" + columns_read(p_, h, false), scores, h, b, queries, keys);
        }
        const double s = p_.scale_factor();
        Matrix scaled = scale(scores, s, dtype_);
        steps_.record(StepName::scaled,
                      fmt::format("s · S, s = {}", p_.scale.kind == Scale::Kind::automatic ? fmt::format("1/√{} = {}", p_.d_k, describe_number(s))
                                                                                                : describe_number(s)),
                      scaled, h, b, queries, keys);
        if (p_.softcap) {
            scaled = soft_cap(scaled, *p_.softcap, dtype_);
            steps_.record(StepName::capped, fmt::format("c · tanh(S_s / c), c = {}", describe_number(*p_.softcap)), scaled, h, b, queries, keys);
        }
        const Matrix mask = head_mask(p_, b, h, rows_);
        steps_.record(StepName::mask, "0 where a query may read a key, −∞ where it may not", mask, h, b, queries, keys);
        if (pattern_ && pattern_->reach && !reach_recorded_) {  // the pattern's, so once
            reach_recorded_ = true;
            trace_.steps.push_back({StepName::reach, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                                    "least layers L through which key j reaches query i (inf: never)", *pattern_->reach, query_labels(p_), keys, ""});
        }
        const Matrix masked = add_elementwise(scaled, mask, dtype_);
        // Without a mask (M = 0) the softmax reads the scaled scores: its formulas name them, not Z
        // (docs/NOTATION.md).
        const bool unmasked = std::all_of(mask.data().begin(), mask.data().end(), [](double x) { return x == 0; });
        const std::string before_mask = p_.softcap ? "S_c" : "S_s", z = unmasked ? before_mask : "Z";
        steps_.record(StepName::masked, before_mask + (unmasked ? " + M = " + before_mask + " (no mask: M = 0)" : " + M"), masked, h, b, queries, keys);
        SoftmaxSteps softmax = softmax_rows(masked, p_.empty_rows, dtype_, options_.max_shift, &mask);
        for (auto& row : softmax.empty_rows) row += rows_.first;
        steps_.note_empty_rows(softmax.empty_rows, h, b);
        if (options_.max_shift) steps_.record(StepName::row_max, "rowmax(" + z + ")", softmax.row_max, h, b, queries);
        steps_.record(StepName::exp, options_.max_shift ? "exp(" + z + " − m)" : "exp(" + z + ") (no max shift)", softmax.exp, h, b, queries, keys);
        steps_.record(StepName::row_sum, "rowsum(E)", softmax.row_sum, h, b, queries);
        steps_.record(StepName::weights, "E / ℓ = softmax(" + z + ")", softmax.weights, h, b, queries, keys);
        const bool dropping = p_.dropout && p_.dropout->train;
        if (dropping) {
            if (!dropout_draws_) dropout_draws_.emplace(p_);
            Matrix keep = dropout_draws_->keep(b, h, rows_);
            for (double x : keep.data()) kept_ += x;
            drawn_ += static_cast<double>(keep.data().size());
            softmax.weights = apply_dropout(softmax.weights, keep, p_.dropout->p, dtype_);
            steps_.record(StepName::keep, fmt::format("1 where the draw ≥ p = {} (kept), 0 where dropped", describe_number(p_.dropout->p)), std::move(keep), h, b,
                          queries, keys);
            steps_.record(StepName::dropped, fmt::format("A ⊙ B / (1 − p) = A ⊙ B / {}", describe_number(1 - p_.dropout->p)), softmax.weights, h, b,
                          queries, keys);
        }
        const Matrix out = backend_->multiply(softmax.weights, in.v, dtype_);
        const std::string a = dropping ? "A_d" : "A";
        steps_.record(StepName::out, (p_.kv_heads < p_.heads ? fmt::format("{} V_{}", a, g) : a + " V") + columns_read(p_, h, true), out, h, b, queries);
        return out;
    }

    QueryRows rows_;
    std::vector<std::string> queries_;  // the labels of those rows
    std::optional<PatternFacts> pattern_;  // with a sparse pattern, in `run` only
    double kept_ = 0, drawn_ = 0;           // dropout's keep: ones and draws
    std::optional<MlaParts> mla_;           // the current sequence's, with mla
    double absorbed_diff_ = 0;              // the absorbed scores against the explicit ones
    bool reach_recorded_ = false;
    std::optional<DropoutDraws> dropout_draws_;  // one stream, in the order the heads run
};

}  // namespace

Trace pipeline_full(const Problem& problem, const RunOptions& options) { return FullPipeline(problem, options, all_query_rows(problem)).run(); }

Trace pipeline_full_rows(const Problem& problem, const RunOptions& options, std::size_t batch, QueryRows rows) {
    return FullPipeline(problem, options, rows).run_one(batch);
}

}  // namespace attn_trace
