// The full trace (SPEC §4): every intermediate of every head of every sequence.
#include <fmt/format.h>

#include "attention_parts.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/pipeline.hpp"

namespace attn_trace {

namespace {

std::string describe_number(double x) { return fmt::format("{:.6g}", x); }

class FullPipeline {
public:
    FullPipeline(const Problem& problem, const RunOptions& options)
        : p_(problem), dtype_(options.dtype), backend_(make_backend(options.backend)) {}

    Trace run() {
        trace_.command = "run";
        trace_.problem = summarise();
        add_notes();
        for (std::size_t b = 0; b < p_.batch; ++b) run_sequence(b);
        return std::move(trace_);
    }

private:
    TraceSummary summarise() const {
        TraceSummary s;
        s.title = p_.title;
        s.batch = p_.batch;
        s.n = p_.n;
        s.m = p_.m;
        s.d_model = p_.d_model;
        s.heads = p_.heads;
        s.kv_heads = p_.kv_heads;
        s.d_k = p_.d_k;
        s.d_v = p_.d_v;
        s.scale = round_to(dtype_, p_.scale_factor());
        s.mask = describe_masks(p_.masks);
        if (!p_.lengths.empty()) s.mask += (p_.masks.empty() ? "" : " + ") + std::string("lengths");
        s.dtype = dtype_name(dtype_);
        s.backend = backend_->name();
        s.empty_rows = empty_rows_name(p_.empty_rows);
        return s;
    }

    void add_notes() {
        for (const auto& spec : p_.masks)
            if (spec.is_causal() && p_.n != p_.m)
                trace_.notes.push_back(
                    spec.kind == MaskSpec::Kind::causal_upper_left
                        ? fmt::format("causal mask with n = {} queries and m = {} keys: top-left alignment, query i reads keys j <= i "
                                      "(PyTorch is_causal=True); use causal-bottom-right to align the queries with the end of the keys",
                                      p_.n, p_.m)
                        : fmt::format("causal mask with n = {} queries and m = {} keys: bottom-right alignment, query i reads keys "
                                      "j <= i + {} (the queries are the last {} tokens, as in cached decoding)",
                                      p_.n, p_.m, static_cast<long>(p_.m) - static_cast<long>(p_.n), p_.n));
        if (p_.kv_heads < p_.heads) {
            const int group = p_.heads / p_.kv_heads;
            std::string sharing = fmt::format("{}: {} query heads share {} KV head{}:", p_.kv_heads == 1 ? "multi-query" : "grouped-query",
                                              p_.heads, p_.kv_heads, p_.kv_heads == 1 ? "" : "s");
            for (int g = 0; g < p_.kv_heads; ++g)
                sharing += fmt::format("{} query heads {}-{} read KV head {}", g ? ";" : "", g * group, (g + 1) * group - 1, g);
            trace_.notes.push_back(sharing);
        }
    }

    Step& record(std::string name, std::string formula, Matrix values, std::optional<int> head, std::size_t batch,
              const std::vector<std::string>& rows = {}, const std::vector<std::string>& columns = {}) {
        Step step;
        step.name = std::move(name);
        step.formula = std::move(formula);
        step.values = std::move(values);
        step.head = head;
        if (p_.batched) step.batch = static_cast<int>(batch);
        step.row_labels = rows;
        step.column_labels = columns;
        trace_.steps.push_back(std::move(step));
        return trace_.steps.back();
    }

    void run_sequence(std::size_t b) {
        const auto& queries = query_labels(p_);
        const auto& keys = key_labels(p_);
        const auto& sources = p_.cross_attention() ? p_.source_tokens : keys;
        if (p_.from_tokens()) {
            record("x", "X", p_.X[b], std::nullopt, b, queries);
            if (p_.cross_attention()) record("x_source", "X_source", p_.X_source[b], std::nullopt, b, sources);
        }
        const Projections qkv = project(p_, b, *backend_, dtype_);
        const bool projected = p_.from_tokens();
        record("q", projected ? (p_.b_Q ? "X W_Q + b_Q" : "X W_Q") : "Q (given)", qkv.q, std::nullopt, b, queries);
        const std::string source = p_.cross_attention() ? "X_source" : "X";
        record("k", projected ? source + (p_.b_K ? " W_K + b_K" : " W_K") : "K (given)", qkv.k, std::nullopt, b, keys);
        record("v", projected ? source + (p_.b_V ? " W_V + b_V" : " W_V") : "V (given)", qkv.v, std::nullopt, b, keys);

        std::vector<Matrix> outs;
        for (int h = 0; h < p_.heads; ++h) outs.push_back(run_head(qkv, h, b));
        if (p_.heads > 1 || p_.W_O) {
            Matrix concat(p_.n, static_cast<std::size_t>(p_.heads) * p_.d_v);
            for (int h = 0; h < p_.heads; ++h)
                for (std::size_t i = 0; i < p_.n; ++i)
                    for (std::size_t j = 0; j < p_.d_v; ++j) concat(i, static_cast<std::size_t>(h) * p_.d_v + j) = outs[h](i, j);
            record("concat", p_.heads > 1 ? fmt::format("[O_0 … O_{}]", p_.heads - 1) : "O_0", concat, std::nullopt, b, queries);
            if (p_.W_O) {
                Matrix final_out = backend_->multiply(concat, *p_.W_O, dtype_);
                if (p_.b_O) {
                    Matrix bias(final_out.rows(), final_out.cols());
                    for (std::size_t i = 0; i < bias.rows(); ++i)
                        for (std::size_t j = 0; j < bias.cols(); ++j) bias(i, j) = (*p_.b_O)[j];
                    final_out = add_elementwise(final_out, bias, dtype_);
                }
                record("final", p_.b_O ? "concat W_O + b_O" : "concat W_O", final_out, std::nullopt, b, queries);
            }
        }
    }

    // One head: scores → scaled → (capped) → mask → masked → softmax steps → out.
    Matrix run_head(const Projections& qkv, int h, std::size_t b) {
        const auto& queries = query_labels(p_);
        const auto& keys = key_labels(p_);
        const int g = kv_head_of(p_, h);
        const auto d_k = p_.d_k, d_v = p_.d_v;
        Matrix q = qkv.q.columns(static_cast<std::size_t>(h) * d_k, d_k);
        Matrix k = qkv.k.columns(static_cast<std::size_t>(g) * d_k, d_k);
        const Matrix v = qkv.v.columns(static_cast<std::size_t>(g) * d_v, d_v);
        if (p_.rope) {
            q = apply_rope(q, *p_.rope, query_positions(p_), dtype_);
            k = apply_rope(k, *p_.rope, key_positions(p_), dtype_);
            record("q_rot", "RoPE(q)", q, h, b, queries);
            record("k_rot", "RoPE(k)", k, h, b, keys);
        }
        const std::string k_name = p_.kv_heads < p_.heads ? fmt::format("K_{}", g) : "K";
        const Matrix scores = backend_->multiply_transposed(q, k, dtype_);
        record("scores", "Q " + k_name + "ᵀ", scores, h, b, queries, keys);
        const double s = p_.scale_factor();
        Matrix scaled = scale(scores, s, dtype_);
        record("scaled", fmt::format("s · scores, s = {}", p_.scale.kind == Scale::Kind::automatic ? fmt::format("1/√{} = {}", d_k, describe_number(s)) : describe_number(s)),
            scaled, h, b, queries, keys);
        if (p_.softcap) {
            scaled = soft_cap(scaled, *p_.softcap, dtype_);
            record("capped", fmt::format("c · tanh(scaled / c), c = {}", describe_number(*p_.softcap)), scaled, h, b, queries, keys);
        }
        const Matrix mask = head_mask(p_, b, h);
        record("mask", "M (0 = may read, -inf = may not)", mask, h, b, queries, keys);
        const Matrix masked = add_elementwise(scaled, mask, dtype_);
        record("masked", p_.softcap ? "capped + M" : "scaled + M", masked, h, b, queries, keys);
        SoftmaxSteps softmax = softmax_rows(masked, p_.empty_rows, dtype_);
        if (!softmax.empty_rows.empty()) {
            if (p_.empty_rows == EmptyRows::error) fail_empty_row(p_, softmax.empty_rows.front(), h, b);
            trace_.notes.push_back(fmt::format("{} row{} with no visible key{}{}: empty_rows = {} ({})", softmax.empty_rows.size(),
                                               softmax.empty_rows.size() == 1 ? "" : "s", p_.heads > 1 ? fmt::format(" in head {}", h) : "",
                                               p_.batched ? fmt::format(" of batch {}", b) : "", empty_rows_name(p_.empty_rows),
                                               p_.empty_rows == EmptyRows::zero ? "weights and output 0, as PyTorch >= 2.5" : "NaN, as older PyTorch"));
        }
        record("row_max", "max_j masked", softmax.row_max, h, b, queries);
        record("exp", "exp(masked − row_max)", softmax.exp, h, b, queries, keys);
        record("row_sum", "Σ_j exp", softmax.row_sum, h, b, queries);
        record("weights", "A = exp / row_sum", softmax.weights, h, b, queries, keys);
        const Matrix out = backend_->multiply(softmax.weights, v, dtype_);
        record("out", p_.kv_heads < p_.heads ? fmt::format("A V_{}", g) : "A V", out, h, b, queries);
        return out;
    }

    const Problem& p_;
    Dtype dtype_;
    std::unique_ptr<Backend> backend_;
    Trace trace_;
};

}  // namespace

Trace pipeline_full(const Problem& problem, const RunOptions& options) { return FullPipeline(problem, options).run(); }

}  // namespace attn_trace
