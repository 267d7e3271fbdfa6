// The backward pass (SPEC §18): every gradient of L = Σ d_out ⊙ output, from the
// forward trace's own values, in the order reverse-mode differentiation meets them.
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "attn_trace/attention_parts.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/random.hpp"
#include "stepwise_parts.hpp"

namespace attn_trace {

namespace {

// Element-wise a ⊙ b.
Matrix hadamard(const Matrix& a, const Matrix& b) {
    Matrix out(a.rows(), a.cols());
    for (std::size_t i = 0; i < out.data().size(); ++i) out.data()[i] = a.data()[i] * b.data()[i];
    return out;
}

// The column sums of a (rows, cols) as a (1, cols) row: a bias's gradient.
Matrix column_sums(const Matrix& a) {
    Matrix out(1, a.cols(), 0.0);
    for (std::size_t i = 0; i < a.rows(); ++i)
        for (std::size_t j = 0; j < a.cols(); ++j) out(0, j) += a(i, j);
    return out;
}

void add_into(Matrix& into, const Matrix& a) {
    if (into.empty()) {
        into = a;
        return;
    }
    for (std::size_t i = 0; i < into.data().size(); ++i) into.data()[i] += a.data()[i];
}

void put_columns(Matrix& into, const Matrix& a, std::size_t first) {
    for (std::size_t i = 0; i < a.rows(); ++i) std::copy(a.row(i), a.row(i) + a.cols(), into.row(i) + first);
}

// --d-out ones | random:SEED, else the problem's d_out, else ones: one (n, width) per sequence.
std::vector<Matrix> upstream(const Problem& p, const std::string& option, std::size_t width) {
    if (option.empty() && !p.d_out.empty()) return p.d_out;
    std::vector<Matrix> out;
    if (option.empty() || option == "ones") {
        for (std::size_t b = 0; b < p.batch; ++b) out.emplace_back(p.n, width, 1.0);
        return out;
    }
    const std::string prefix = "random:";
    char* end = nullptr;
    const std::string digits = option.substr(std::min(option.size(), prefix.size()));
    const unsigned long long seed = option.rfind(prefix, 0) == 0 && !digits.empty() && digits[0] != '-' ? std::strtoull(digits.c_str(), &end, 10) : 0;
    if (option.rfind(prefix, 0) != 0 || digits.empty() || digits[0] == '-' || end == nullptr || *end != '\0')
        throw InputError(fmt::format("⟦d_out⟧ {}: expected ones or random:SEED (a whole number), e.g. random:3", option));
    PortableRandom generator(seed);
    for (std::size_t b = 0; b < p.batch; ++b) {
        Matrix d(p.n, width);
        draw(generator, RandomDraw{}, d.data());
        out.push_back(std::move(d));
    }
    return out;
}

class GradPipeline {
public:
    GradPipeline(const Problem& problem, const RunOptions& options, const GradOptions& grad)
        : p_(problem), dtype_(options.dtype), backend_(make_backend(options.backend)), grad_(grad), forward_(pipeline_full(problem, options)),
          steps_(problem, trace_) {}

    Trace run() {
        trace_.command = "grad";
        trace_.problem = forward_.problem;
        trace_.notes = forward_.notes;
        const std::size_t width = p_.W_O ? p_.W_O->cols() : static_cast<std::size_t>(p_.heads) * p_.d_v;
        const auto d_out = upstream(p_, grad_.d_out, width);
        for (std::size_t b = 0; b < p_.batch; ++b) run_sequence(b, d_out[b]);
        record_weight_gradients();
        return std::move(trace_);
    }

private:
    const Matrix& forward(const std::string& name, std::optional<int> head, std::size_t b) const {
        const Step* step = forward_.find(name, head, p_.batched ? std::optional<int>(static_cast<int>(b)) : std::nullopt, std::nullopt, std::nullopt);
        if (!step) throw std::logic_error("grad: the forward trace has no " + name);
        return step->values;
    }
    Matrix times(const Matrix& a, const Matrix& b) const { return backend_->multiply(a, b, dtype_); }
    Matrix times_transposed(const Matrix& a, const Matrix& b) const { return backend_->multiply_transposed(a, b, dtype_); }

    void run_sequence(std::size_t b, const Matrix& d_out) {
        const auto& queries = query_labels(p_);
        Matrix grad_concat = d_out;
        if (p_.W_O) {
            steps_.record("grad_final", "dL/d final (the given d_out)", d_out, std::nullopt, b, queries);
            grad_concat = times_transposed(d_out, *p_.W_O);  // d_out W_Oᵀ
            const Matrix& concat = forward("concat", std::nullopt, b);
            add_into(grad_W_O_, times(concat.transposed(), d_out));
            if (p_.b_O) add_into(grad_b_O_, column_sums(d_out));
        }
        steps_.record("grad_concat", p_.W_O ? "grad_final W_Oᵀ" : "dL/d concat (the given d_out)", grad_concat, std::nullopt, b, queries);
        Matrix grad_q(p_.n, static_cast<std::size_t>(p_.heads) * p_.d_k, 0.0);
        Matrix grad_k(p_.m, static_cast<std::size_t>(p_.kv_heads) * p_.d_k, 0.0), grad_v(p_.m, static_cast<std::size_t>(p_.kv_heads) * p_.d_v, 0.0);
        std::vector<Matrix> head_k(static_cast<std::size_t>(p_.kv_heads)), head_v(static_cast<std::size_t>(p_.kv_heads));
        for (int h = 0; h < p_.heads; ++h) {
            HeadGradients g = run_head(h, b, grad_concat.columns(static_cast<std::size_t>(h) * p_.d_v, p_.d_v));
            put_columns(grad_q, g.q, static_cast<std::size_t>(h) * p_.d_k);
            const std::size_t kv = static_cast<std::size_t>(kv_head_of(p_, h));
            add_into(head_k[kv], g.k);  // GQA: a KV head's gradient sums its query heads'
            add_into(head_v[kv], g.v);
        }
        const auto& keys = key_labels(p_);
        for (int g = 0; g < p_.kv_heads; ++g) {
            const std::size_t gs = static_cast<std::size_t>(g);
            const std::string sum = p_.kv_heads < p_.heads ? fmt::format(", summed over the {} query heads that read it", p_.heads / p_.kv_heads) : "";
            steps_.record("grad_k", (p_.rope ? "RoPE^(-1)(grad_k_rot)" : "grad_scoresᵀ Q") + sum, head_k[gs], g, b, keys);
            steps_.record("grad_v", "Aᵀ grad_out" + sum, head_v[gs], g, b, keys);
            put_columns(grad_k, head_k[gs], gs * p_.d_k);
            put_columns(grad_v, head_v[gs], gs * p_.d_v);
        }
        if (p_.from_tokens()) record_input_gradients(b, grad_q, grad_k, grad_v);
    }

    struct HeadGradients {
        Matrix q, k, v;
    };

    // One head, from grad_out back to its q, k and v.
    HeadGradients run_head(int h, std::size_t b, const Matrix& grad_out) {
        const auto& queries = query_labels(p_);
        const auto& keys = key_labels(p_);
        const int g = kv_head_of(p_, h);
        const std::size_t gs = static_cast<std::size_t>(g), hs = static_cast<std::size_t>(h);
        steps_.record("grad_out", fmt::format("grad_concat columns {}…{}", hs * p_.d_v, (hs + 1) * p_.d_v - 1), grad_out, h, b, queries);
        const bool dropping = p_.dropout && p_.dropout->train;
        const Matrix& mixed = forward(dropping ? "dropped" : "weights", h, b);  // what A V read
        const Matrix v = forward("v", std::nullopt, b).columns(gs * p_.d_v, p_.d_v);
        HeadGradients out;
        out.v = times(mixed.transposed(), grad_out);
        Matrix grad_weights = times_transposed(grad_out, v);  // grad_out Vᵀ
        if (dropping) {
            steps_.record("grad_dropped", "grad_out Vᵀ", grad_weights, h, b, queries, keys);
            grad_weights = scale(hadamard(grad_weights, forward("keep", h, b)), 1.0 / (1.0 - p_.dropout->p), dtype_);
            steps_.record("grad_weights", "grad_dropped ⊙ keep / (1 − p)", grad_weights, h, b, queries, keys);
        } else {
            steps_.record("grad_weights", "grad_out Vᵀ", grad_weights, h, b, queries, keys);
        }
        // The softmax backward, row by row: a ⊙ (g − Σ_j g_j a_j); a blocked cell has a = 0.
        const Matrix& a = forward("weights", h, b);
        Matrix grad_masked(a.rows(), a.cols());
        for (std::size_t i = 0; i < a.rows(); ++i) {
            double inner = 0;
            for (std::size_t j = 0; j < a.cols(); ++j) inner += grad_weights(i, j) * a(i, j);
            inner = round_to(dtype_, inner);
            for (std::size_t j = 0; j < a.cols(); ++j) grad_masked(i, j) = round_to(dtype_, a(i, j) * (grad_weights(i, j) - inner));
        }
        steps_.record("grad_masked", "A ⊙ (grad_weights − rowsum(grad_weights ⊙ A))", grad_masked, h, b, queries, keys);
        if (grad_.row) record_jacobian(h, b, a);
        Matrix grad_scaled = grad_masked;  // the mask is a constant: its gradient passes through
        if (p_.softcap) {
            steps_.record("grad_capped", "grad_masked (the mask adds a constant)", grad_masked, h, b, queries, keys);
            const Matrix& scaled = forward("scaled", h, b);
            const double c = *p_.softcap;
            for (std::size_t i = 0; i < grad_scaled.data().size(); ++i) {
                const double t = std::tanh(scaled.data()[i] / c);
                grad_scaled.data()[i] = round_to(dtype_, grad_masked.data()[i] * (1 - t * t));
            }
        }
        steps_.record("grad_scaled", p_.softcap ? "grad_capped ⊙ (1 − tanh²(scaled / c))" : "grad_masked", grad_scaled, h, b, queries, keys);
        const Matrix grad_scores = scale(grad_scaled, p_.scale_factor(), dtype_);
        steps_.record("grad_scores", "s · grad_scaled", grad_scores, h, b, queries, keys);
        // q and k as the scores read them (after RoPE).
        const Matrix q = p_.rope ? forward("q_rot", h, b) : forward("q", std::nullopt, b).columns(hs * p_.d_k, p_.d_k);
        const Matrix k = p_.rope ? forward("k_rot", h, b) : forward("k", std::nullopt, b).columns(gs * p_.d_k, p_.d_k);
        out.q = times(grad_scores, k);
        out.k = times(grad_scores.transposed(), q);
        if (p_.rope) {
            steps_.record("grad_q_rot", "grad_scores K_rot", out.q, h, b, queries);
            steps_.record("grad_k_rot", "grad_scoresᵀ Q_rot", out.k, h, b, keys);
            // RoPE is a rotation: its gradient turns back by the same angle.
            out.q = apply_rope(out.q, *p_.rope, negated(query_positions(p_)), dtype_);
            out.k = apply_rope(out.k, *p_.rope, negated(key_positions(p_)), dtype_);
        }
        steps_.record("grad_q", p_.rope ? "RoPE^(-1)(grad_q_rot)" : "grad_scores K", out.q, h, b, queries);
        return out;
    }

    static std::vector<double> negated(std::vector<double> positions) {
        for (double& x : positions) x = -x;
        return positions;
    }

    // diag(a_i) − a_i a_iᵀ of row i: how row i's weights move with its scores.
    void record_jacobian(int h, std::size_t b, const Matrix& a) {
        const std::size_t i = *grad_.row, m = a.cols();
        Matrix jacobian(m, m);
        double squares = 0;
        for (std::size_t r = 0; r < m; ++r)
            for (std::size_t c = 0; c < m; ++c) {
                jacobian(r, c) = round_to(dtype_, (r == c ? a(i, r) : 0.0) - a(i, r) * a(i, c));
                squares += jacobian(r, c) * jacobian(r, c);
            }
        steps_.record("jacobian", fmt::format("diag(a_{}) − a_{} a_{}ᵀ, ‖·‖_F = {:.6g}", i, i, i, std::sqrt(squares)), std::move(jacobian), h, b,
                      key_labels(p_), key_labels(p_));
        if (b == 0) trace_.numbers.push_back({p_.heads == 1 ? "jacobian_norm" : fmt::format("jacobian_norm_head_{}", h), std::sqrt(squares)});
    }

    // From grad_q, grad_k, grad_v to the inputs: W, b and X (X_source).
    void record_input_gradients(std::size_t b, const Matrix& grad_q, const Matrix& grad_k, const Matrix& grad_v) {
        const Matrix& x = p_.X[b];
        const Matrix& source = p_.cross_attention() ? p_.X_source[b] : x;
        add_into(grad_W_[0], times(x.transposed(), grad_q));
        add_into(grad_W_[1], times(source.transposed(), grad_k));
        add_into(grad_W_[2], times(source.transposed(), grad_v));
        add_into(grad_b_[0], column_sums(grad_q));
        add_into(grad_b_[1], column_sums(grad_k));
        add_into(grad_b_[2], column_sums(grad_v));
        const Matrix from_q = times_transposed(grad_q, *p_.W_Q);
        Matrix from_kv = times_transposed(grad_k, *p_.W_K);
        add_into(from_kv, times_transposed(grad_v, *p_.W_V));
        if (p_.cross_attention()) {
            steps_.record("grad_x", "grad_q W_Qᵀ", from_q, std::nullopt, b, query_labels(p_));
            steps_.record("grad_x_source", "grad_k W_Kᵀ + grad_v W_Vᵀ", from_kv, std::nullopt, b, p_.source_tokens);
        } else {
            Matrix grad_x = from_q;
            add_into(grad_x, from_kv);
            steps_.record("grad_x", "grad_q W_Qᵀ + grad_k W_Kᵀ + grad_v W_Vᵀ", grad_x, std::nullopt, b, query_labels(p_));
        }
    }

    // The weights are shared by the sequences of a batch: their gradients sum over it.
    void record_weight_gradients() {
        const std::string over = p_.batch > 1 ? fmt::format(", summed over the {} sequences", p_.batch) : "";
        const auto record = [&](const char* name, const std::string& formula, Matrix& value) {
            if (value.empty()) return;
            Step step;
            step.name = name;
            step.formula = formula + over;
            step.values = std::move(value);
            trace_.steps.push_back(std::move(step));
        };
        if (p_.W_O) record("grad_W_O", "concatᵀ grad_final", grad_W_O_);
        if (p_.b_O) record("grad_b_O", "Σ_i grad_final", grad_b_O_);
        if (!p_.from_tokens()) return;
        record("grad_W_Q", "Xᵀ grad_q", grad_W_[0]);
        record("grad_W_K", std::string(p_.cross_attention() ? "X_sourceᵀ" : "Xᵀ") + " grad_k", grad_W_[1]);
        record("grad_W_V", std::string(p_.cross_attention() ? "X_sourceᵀ" : "Xᵀ") + " grad_v", grad_W_[2]);
        if (p_.b_Q) record("grad_b_Q", "Σ_i grad_q", grad_b_[0]);
        if (p_.b_K) record("grad_b_K", "Σ_j grad_k", grad_b_[1]);
        if (p_.b_V) record("grad_b_V", "Σ_j grad_v", grad_b_[2]);
    }

    const Problem& p_;
    Dtype dtype_;
    std::unique_ptr<Backend> backend_;
    GradOptions grad_;
    Trace forward_;
    Trace trace_;
    StepRecorder steps_;
    Matrix grad_W_O_, grad_b_O_, grad_W_[3], grad_b_[3];
};

}  // namespace

Trace pipeline_grad(const Problem& problem, const RunOptions& options, const GradOptions& grad) {
    if (problem.mla) throw InputError(fmt::format("{}: grad does not trace MLA problems yet (their forward pass is run's)", problem.file));
    if (grad.row && *grad.row >= problem.n)
        throw InputError(fmt::format("⟦row⟧ {}: the problem has {} quer{} (0 to {})", *grad.row, problem.n, problem.n == 1 ? "y" : "ies", problem.n - 1));
    return GradPipeline(problem, options, grad).run();
}

}  // namespace attn_trace
