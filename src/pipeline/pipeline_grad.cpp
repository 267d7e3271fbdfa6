// The backward pass (docs/COMMANDS.md#grad): every gradient of L = Σ d_out ⊙ output, from the
// forward trace's own values, in the order reverse-mode differentiation meets them.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "attn_trace/compare.hpp"
#include "attn_trace/errors.hpp"
#include "fused_inputs.hpp"
#include "grad_sums.hpp"
#include "pipeline_base.hpp"

namespace attn_trace {

namespace {

class GradPipeline : PipelineBase {
public:
    GradPipeline(const Problem& problem, const RunOptions& options, const GradOptions& grad)
        : PipelineBase(problem, options, "grad"), grad_(grad),
          // The tiled backward keeps what FlashAttention-2's forward keeps: row_max, row_sum and out (the fast path;
          // in a half type, which the fast path does not compute, the same steps of the full pass).
          // The fused backward runs its own forward, inside the kernel.
          forward_(grad.fast ? Trace{} : grad.tiled && !is_half(options.dtype) ? pipeline_fast(problem, options, {}) : pipeline_full(problem, options)) {}

    Trace run() {
        // What the forward pass noted holds for its gradients too, but for its fast path's
        // tiles: the tiled backward's own tiles are the ones to state (tiled_note).
        for (const Note& note : forward_.notes)
            if (note.kind != NoteKind::fast_path) trace_.notes.push_back(note);
        if (grad_.fast) trace_.notes = problem_notes(p_, dtype_);
        const std::size_t width = p_.W_O ? p_.W_O->cols() : static_cast<std::size_t>(p_.heads) * p_.d_v;
        auto d_out = upstream(p_, grad_.d_out, width);
        if (is_half(dtype_))  // an input: stored in the type
            for (Matrix& d : d_out) d = rounded(std::move(d), dtype_);
        for (std::size_t b = 0; b < p_.batch; ++b) run_sequence(b, d_out[b]);
        if (grad_.row) trace_.numbers.push_back({"jacobian_row", static_cast<double>(*grad_.row)});
        record_weight_gradients();
        if (grad_.tiled) compare_with_untiled();
        if (grad_.fast) fused_numbers();
        return finish();  // a gradient past the type's range is an overflow as a forward step's is
    }

private:
    const Matrix& forward(StepName name, std::optional<int> head, std::size_t b) const {
        const Step* step = forward_.find(name, head, p_.batched ? std::optional<int>(static_cast<int>(b)) : std::nullopt, std::nullopt, std::nullopt);
        if (!step) throw std::logic_error(fmt::format("grad: the forward trace has no {}", name));
        return step->values;
    }
    // A product stored as a step (rounded to the run's type), or with `compute_`, one
    // term of a sum that is rounded once when stored (add_into).
    Matrix times(const Matrix& a, const Matrix& b, std::optional<Dtype> in = std::nullopt) const { return backend_->multiply(a, b, in.value_or(dtype_)); }
    Matrix times_transposed(const Matrix& a, const Matrix& b, std::optional<Dtype> in = std::nullopt) const {
        return backend_->multiply_transposed(a, b, in.value_or(dtype_));
    }
    double f(double x) const { return round_to(compute_, x); }  // one operation of the arithmetic type
    // d(c · tanh(x / c))/dx = 1 − tanh²(x / c), in the arithmetic type (c a constant of it).
    double softcap_slope(double x) const {
        const double t = f(std::tanh(f(x / f(*p_.softcap))));
        return f(1 - f(t * t));
    }

    void run_sequence(std::size_t b, const Matrix& d_out) {
        const auto& queries = query_labels(p_);
        Matrix grad_concat = d_out;
        if (p_.W_O) {
            steps_.record(StepName::grad_final, "∂L/∂Y (the given d_out)", d_out, std::nullopt, b, queries);
            grad_concat = times_transposed(d_out, *p_.W_O);  // d_out W_Oᵀ
            if (!grad_.fast) add_output_weight_gradients(forward(StepName::concat, std::nullopt, b), d_out);
        }
        steps_.record(StepName::grad_concat, p_.W_O ? "dY W_Oᵀ" : "∂L/∂O_cat (the given d_out)", grad_concat, std::nullopt, b, queries);
        if (grad_.fast) {
            run_sequence_fused(b, d_out, grad_concat);
            return;
        }
        Matrix grad_q(p_.n, static_cast<std::size_t>(p_.heads) * p_.d_k, 0.0);
        Matrix grad_k(p_.m, static_cast<std::size_t>(p_.kv_heads) * p_.d_k, 0.0), grad_v(p_.m, static_cast<std::size_t>(p_.kv_heads) * p_.d_v, 0.0);
        std::vector<Matrix> head_k(static_cast<std::size_t>(p_.kv_heads)), head_v(static_cast<std::size_t>(p_.kv_heads));
        std::optional<Projections> projections;  // the tiled backward recomputes from q, k, v
        if (grad_.tiled) projections = project(p_, b, *backend_, dtype_);
        for (int h = 0; h < p_.heads; ++h) {
            const Matrix grad_out = grad_concat.columns(static_cast<std::size_t>(h) * p_.d_v, p_.d_v);
            HeadGradients g = grad_.tiled ? run_head_tiled(h, b, grad_out, *projections) : run_head(h, b, grad_out);
            put_columns(grad_q, g.q, static_cast<std::size_t>(h) * p_.d_k);
            const std::size_t kv = static_cast<std::size_t>(kv_head_of(p_, h));
            add_into(head_k[kv], g.k, compute_);  // GQA: a KV head's gradient sums its query heads'
            add_into(head_v[kv], g.v, compute_);
        }
        const auto& keys = key_labels(p_);
        for (int g = 0; g < p_.kv_heads; ++g) {
            const std::size_t gs = static_cast<std::size_t>(g);
            head_k[gs] = rounded(std::move(head_k[gs]), dtype_);
            head_v[gs] = rounded(std::move(head_v[gs]), dtype_);
            const std::string sum = p_.kv_heads < p_.heads ? fmt::format(", summed over the {} query heads that read it", p_.heads / p_.kv_heads) : "";
            steps_.record(StepName::grad_k, (p_.rope ? "RoPE⁻¹(dK_rot)" : "dSᵀ Q") + sum, head_k[gs], g, b, keys);
            steps_.record(StepName::grad_v, "Aᵀ dO" + sum, head_v[gs], g, b, keys);
            put_columns(grad_k, head_k[gs], gs * p_.d_k);
            put_columns(grad_v, head_v[gs], gs * p_.d_v);
        }
        if (p_.from_tokens()) record_input_gradients(b, grad_q, grad_k, grad_v);
    }

    void add_output_weight_gradients(const Matrix& concat, const Matrix& d_out) {
        add_into(grad_W_O_, times(concat.transposed(), d_out, compute_), compute_);
        if (p_.b_O) add_into(grad_b_O_, column_sums(d_out, compute_), compute_);
    }

    // The fused backward of one sequence, every head at once: the kernel runs its own
    // forward and returns out (for W_O's gradient), lse, delta and dQ, dK, dV.
    void run_sequence_fused(std::size_t b, const Matrix& d_out, const Matrix& grad_concat) {
        FusedInputs in(p_, b, *backend_, dtype_);
        const FastPathOptions& fast = *grad_.fast;
        in.call.threads = fast.threads > 0 ? fast.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        in.call.block_q = fast.block_q;
        in.call.block_k = fast.block_k;
        const AttentionGradients g = attend_backward(*backend_, in.call, grad_concat);
        if (p_.W_O) add_output_weight_gradients(g.out, d_out);
        fused_stats_.tiles_computed += g.stats.tiles_computed;
        fused_stats_.tiles_skipped += g.stats.tiles_skipped;
        fused_stats_.workers = g.stats.workers;
        fused_stats_.block_q = g.stats.block_q;
        fused_stats_.block_k = g.stats.block_k;
        const auto& queries = query_labels(p_);
        Matrix grad_q(p_.n, static_cast<std::size_t>(p_.heads) * p_.d_k);
        for (int h = 0; h < p_.heads; ++h) {
            const std::size_t hs = static_cast<std::size_t>(h);
            std::vector<std::size_t> empty;  // rows that read no key: the empty-row policy applies as in `grad`
            for (std::size_t i = 0; i < p_.n; ++i)
                if (g.lse(hs, i) == -std::numeric_limits<double>::infinity()) empty.push_back(i);
            steps_.note_empty_rows(empty, h, b);
            steps_.record(StepName::lse, "m + ln ℓ, kept from the fused forward pass", block_of(g.lse, hs, 1, 0, p_.n).transposed(), h, b, queries);
            steps_.record(StepName::delta, "rowsum(dO ⊙ O)", block_of(g.delta, hs, 1, 0, p_.n).transposed(), h, b, queries);
            Matrix q = g.grad_q.columns(hs * p_.d_k, p_.d_k);
            if (p_.rope) q = apply_rope(q, *p_.rope, negated(query_positions(p_)), dtype_);
            steps_.record(StepName::grad_q, "Σ over key tiles j of s · dZ_ij K_j" + std::string(p_.rope ? ", turned back by RoPE" : ""), q, h, b, queries);
            put_columns(grad_q, q, hs * p_.d_k);
        }
        Matrix grad_k = g.grad_k, grad_v = g.grad_v;
        const auto& keys = key_labels(p_);
        for (int kv = 0; kv < p_.kv_heads; ++kv) {
            const std::size_t gs = static_cast<std::size_t>(kv);
            Matrix k = g.grad_k.columns(gs * p_.d_k, p_.d_k);
            if (p_.rope) k = apply_rope(k, *p_.rope, negated(key_positions(p_)), dtype_);
            const std::string sum = p_.kv_heads < p_.heads ? fmt::format(", summed over the {} query heads that read it", p_.heads / p_.kv_heads) : "";
            steps_.record(StepName::grad_k, "Σ over query blocks i of s · dZ_ijᵀ Q_i" + std::string(p_.rope ? ", turned back by RoPE" : "") + sum, k, kv, b, keys);
            steps_.record(StepName::grad_v, "Σ over query blocks i of A_ijᵀ dO_i" + sum, g.grad_v.columns(gs * p_.d_v, p_.d_v), kv, b, keys);
            put_columns(grad_k, k, gs * p_.d_k);
        }
        if (p_.from_tokens()) record_input_gradients(b, grad_q, grad_k, grad_v);
    }

    // The fused backward's tiles, worded as the tiled backward's, and counts.
    void fused_numbers() {
        tiled_note(fused_stats_.block_q, fused_stats_.block_k, fused_stats_.tiles_skipped);
        trace_.numbers.push_back({"tiles_computed", static_cast<double>(fused_stats_.tiles_computed)});
        trace_.numbers.push_back({"tiles_skipped", static_cast<double>(fused_stats_.tiles_skipped)});
        trace_.numbers.push_back({"workers", static_cast<double>(fused_stats_.workers)});
    }

    // q stored (rounded to the run's type); k and v in the arithmetic type, terms of the
    // KV head's sum over its query heads.
    struct HeadGradients {
        Matrix q, k, v;
    };

    // One head, from grad_out back to its q, k and v.
    HeadGradients run_head(int h, std::size_t b, const Matrix& grad_out) {
        const auto& queries = query_labels(p_);
        const auto& keys = key_labels(p_);
        const int g = kv_head_of(p_, h);
        const std::size_t gs = static_cast<std::size_t>(g), hs = static_cast<std::size_t>(h);
        steps_.record(StepName::grad_out, fmt::format("dO_cat[:, {}…{}]", hs * p_.d_v, (hs + 1) * p_.d_v - 1), grad_out, h, b, queries);
        const bool dropping = p_.dropout && p_.dropout->train;
        const Matrix& mixed = forward(dropping ? StepName::dropped : StepName::weights, h, b);  // what A V read
        const Matrix v = forward(StepName::v, std::nullopt, b).columns(gs * p_.d_v, p_.d_v);
        HeadGradients out;
        out.v = times(mixed.transposed(), grad_out, compute_);
        Matrix grad_weights = times_transposed(grad_out, v);  // grad_out Vᵀ
        if (dropping) {
            steps_.record(StepName::grad_dropped, "dO Vᵀ", grad_weights, h, b, queries, keys);
            grad_weights = scale(hadamard(grad_weights, forward(StepName::keep, h, b)), 1.0 / (1.0 - p_.dropout->p), dtype_);
            steps_.record(StepName::grad_weights, "dA_d ⊙ B / (1 − p)", grad_weights, h, b, queries, keys);
        } else {
            steps_.record(StepName::grad_weights, "dO Vᵀ", grad_weights, h, b, queries, keys);
        }
        // The softmax backward, row by row: a ⊙ (g − Σ_j g_j a_j); a blocked cell has a = 0.
        const Matrix& a = forward(StepName::weights, h, b);
        Matrix grad_masked(a.rows(), a.cols());
        for (std::size_t i = 0; i < a.rows(); ++i) {
            double inner = 0;
            for (std::size_t j = 0; j < a.cols(); ++j) inner = f(inner + f(grad_weights(i, j) * a(i, j)));
            inner = round_to(dtype_, inner);
            for (std::size_t j = 0; j < a.cols(); ++j) grad_masked(i, j) = round_to(dtype_, f(a(i, j) * f(grad_weights(i, j) - inner)));
        }
        steps_.record(StepName::grad_masked, "A ⊙ (dA − rowsum(dA ⊙ A))", grad_masked, h, b, queries, keys);
        if (grad_.row) record_jacobian(h, b, a);
        Matrix grad_scaled = grad_masked;  // the mask is a constant: its gradient passes through
        if (p_.softcap) {
            steps_.record(StepName::grad_capped, "dZ (the mask adds a constant)", grad_masked, h, b, queries, keys);
            const Matrix& scaled = forward(StepName::scaled, h, b);
            for (std::size_t i = 0; i < grad_scaled.data().size(); ++i)
                grad_scaled.data()[i] = round_to(dtype_, f(grad_masked.data()[i] * softcap_slope(scaled.data()[i])));
        }
        steps_.record(StepName::grad_scaled, p_.softcap ? "dS_c ⊙ (1 − tanh²(S_s / c))" : "dZ", grad_scaled, h, b, queries, keys);
        const Matrix grad_scores = scale(grad_scaled, p_.scale_factor(), dtype_);
        steps_.record(StepName::grad_scores, "s · dS_s", grad_scores, h, b, queries, keys);
        // q and k as the scores read them (after RoPE).
        const Matrix q = p_.rope ? forward(StepName::q_rot, h, b) : forward(StepName::q, std::nullopt, b).columns(hs * p_.d_k, p_.d_k);
        const Matrix k = p_.rope ? forward(StepName::k_rot, h, b) : forward(StepName::k, std::nullopt, b).columns(gs * p_.d_k, p_.d_k);
        out.q = times(grad_scores, k);
        out.k = times(grad_scores.transposed(), q, p_.rope ? dtype_ : compute_);
        if (p_.rope) {
            steps_.record(StepName::grad_q_rot, "dS K_rot", out.q, h, b, queries);
            steps_.record(StepName::grad_k_rot, "dSᵀ Q_rot", out.k, h, b, keys);
            // RoPE is a rotation: its gradient turns back by the same angle.
            out.q = apply_rope(out.q, *p_.rope, negated(query_positions(p_)), dtype_);
            out.k = apply_rope(out.k, *p_.rope, negated(key_positions(p_)), compute_);
        }
        steps_.record(StepName::grad_q, p_.rope ? "RoPE⁻¹(dQ_rot)" : "dS K", out.q, h, b, queries);
        return out;
    }

    // FlashAttention-2's backward for one head: lse = m + ln ℓ and delta =
    // rowsum(grad_out ⊙ out) from the forward, then per Br × Bc tile
    // p = exp(z − lse), grad_p = grad_out V_tᵀ, grad_s = p ⊙ (grad_p − delta),
    // accumulated into grad_q, grad_k and grad_v: no (n, m) matrix is ever held.
    HeadGradients run_head_tiled(int h, std::size_t b, const Matrix& grad_out, const Projections& projections) {
        const auto& queries = query_labels(p_);
        const TiledOptions& tiles = *grad_.tiled;
        const HeadInputs in = head_inputs(p_, projections, h, dtype_);  // q and k after RoPE
        steps_.record(StepName::grad_out, fmt::format("dO_cat[:, {}…{}]", static_cast<std::size_t>(h) * p_.d_v, (static_cast<std::size_t>(h) + 1) * p_.d_v - 1),
                      grad_out, h, b, queries);
        const Matrix &row_max = forward(StepName::row_max, h, b), &row_sum = forward(StepName::row_sum, h, b), &out = forward(StepName::out, h, b);
        Matrix lse(p_.n, 1), delta(p_.n, 1, 0.0);
        for (std::size_t i = 0; i < p_.n; ++i) {
            lse(i, 0) = std::isinf(row_max(i, 0)) ? row_max(i, 0) : round_to(dtype_, f(row_max(i, 0) + f(std::log(row_sum(i, 0)))));
            for (std::size_t c = 0; c < p_.d_v; ++c) delta(i, 0) = f(delta(i, 0) + f(grad_out(i, c) * out(i, c)));
            delta(i, 0) = round_to(dtype_, delta(i, 0));
        }
        steps_.record(StepName::lse, "m + ln ℓ, kept from the forward pass", lse, h, b, queries);
        steps_.record(StepName::delta, "rowsum(dO ⊙ O)", delta, h, b, queries);
        const bool keep_tiles = p_.n * p_.m <= 65536;
        const bool nan_rows = p_.empty_rows == EmptyRows::nan;
        const double s = p_.scale_factor();
        HeadGradients g{Matrix(p_.n, p_.d_k, 0.0), Matrix(p_.m, p_.d_k, 0.0), Matrix(p_.m, p_.d_v, 0.0)};
        for (std::size_t i0 = 0, qb = 0; i0 < p_.n; i0 += tiles.block_q, ++qb) {
            const std::size_t rows = std::min(tiles.block_q, p_.n - i0);
            const Matrix mask = head_mask(p_, b, h, {i0, rows});  // this block's rows only
            const Matrix q_b = block_of(in.q, i0, rows, 0, p_.d_k), grad_out_b = block_of(grad_out, i0, rows, 0, p_.d_v);
            bool block_has_nan_row = false;
            for (std::size_t r = 0; r < rows; ++r) block_has_nan_row = block_has_nan_row || (nan_rows && std::isinf(lse(i0 + r, 0)));
            for (std::size_t j0 = 0, kt = 0; j0 < p_.m; j0 += tiles.block_k, ++kt) {
                const std::size_t cols = std::min(tiles.block_k, p_.m - j0);
                const Matrix m_tile = block_of(mask, 0, rows, j0, cols);
                // Under the nan policy a row that reads no key has NaN weights in every tile (as
                // untiled grad's A has), so its tiles are not skipped: the NaN reaches dK and dV.
                if (std::all_of(m_tile.data().begin(), m_tile.data().end(), [](double x) { return std::isinf(x) && x < 0; }) && !block_has_nan_row) {
                    ++tiles_skipped_;
                    continue;
                }
                ++tiles_computed_;
                const Matrix k_t = block_of(in.k, j0, cols, 0, p_.d_k), v_t = block_of(in.v, j0, cols, 0, p_.d_v);
                // The tile's masked scores, recomputed as the forward pass stores them.
                const Matrix scaled = scale(times_transposed(q_b, k_t), s, dtype_);
                const Matrix z = add_elementwise(p_.softcap ? soft_cap(scaled, *p_.softcap, dtype_) : scaled, m_tile, dtype_);
                Matrix p(rows, cols), grad_s(rows, cols);
                const Matrix grad_p = times_transposed(grad_out_b, v_t);
                Matrix grad_scaled(rows, cols);
                for (std::size_t r = 0; r < rows; ++r)
                    for (std::size_t c = 0; c < cols; ++c) {
                        const double l = lse(i0 + r, 0);
                        p(r, c) = std::isinf(l) && nan_rows ? std::numeric_limits<double>::quiet_NaN()
                                  : std::isinf(z(r, c)) || std::isinf(l) ? 0.0
                                                                          : round_to(dtype_, f(std::exp(f(z(r, c) - l))));
                        grad_s(r, c) = round_to(dtype_, f(p(r, c) * f(grad_p(r, c) - delta(i0 + r, 0))));
                        grad_scaled(r, c) = p_.softcap ? round_to(dtype_, f(grad_s(r, c) * softcap_slope(scaled(r, c)))) : grad_s(r, c);
                    }
                const Matrix grad_scores = scale(grad_scaled, s, dtype_);  // s · dZ, stored as untiled grad's grad_scores is
                add_block(g.q, times(grad_scores, k_t, compute_), i0);
                add_block(g.k, times(grad_scores.transposed(), q_b, compute_), j0);
                add_block(g.v, times(p.transposed(), grad_out_b, compute_), j0);
                if (!keep_tiles) continue;
                const std::array<int, 2> tile{static_cast<int>(qb), static_cast<int>(kt)};
                const auto row_names = slice_labels(queries, i0, rows), key_names = slice_labels(key_labels(p_), j0, cols);
                steps_.record(StepName::p, "exp(Z_ij − lse): the tile's weights A, recomputed", std::move(p), h, b, row_names, key_names).tile = tile;
                steps_.record(StepName::grad_p, "dO V_jᵀ: the tile's dA", grad_p, h, b, row_names, key_names).tile = tile;
                steps_.record(StepName::grad_s, "A_ij ⊙ (dA_ij − δ): the tile's dZ", std::move(grad_s), h, b, row_names, key_names).tile = tile;
            }
        }
        if (p_.rope) {
            g.q = apply_rope(g.q, *p_.rope, negated(query_positions(p_)), compute_);
            g.k = apply_rope(g.k, *p_.rope, negated(key_positions(p_)), compute_);
        }
        g.q = rounded(std::move(g.q), dtype_);
        steps_.record(StepName::grad_q, "Σ over key tiles j of s · dZ_ij K_j" + std::string(p_.rope ? ", turned back by RoPE" : ""), g.q, h, b, queries);
        return g;
    }

    // rows first … of `into` += a, in the arithmetic type (add_into)
    void add_block(Matrix& into, const Matrix& a, std::size_t first) const {
        for (std::size_t i = 0; i < a.rows(); ++i)
            for (std::size_t j = 0; j < a.cols(); ++j) into(first + i, j) = f(into(first + i, j) + a(i, j));
    }

    // The backward's tiles, worded as tiled's forward words its own: Br × Bc as grad
    // used them, and the scores held counted in scores (docs/COMMANDS.md#grad).
    void tiled_note(std::size_t Br, std::size_t Bc, std::size_t skipped) {
        trace_.notes.insert(trace_.notes.begin(), Note{NoteKind::tiled,
                                                       {{"block_q", static_cast<double>(Br)}, {"block_k", static_cast<double>(Bc)},
                                                        {"Tr", static_cast<double>((p_.n + Br - 1) / Br)}, {"Tc", static_cast<double>((p_.m + Bc - 1) / Bc)},
                                                        {"skipped", static_cast<double>(skipped)},
                                                        {"heads_run", static_cast<double>(p_.batch * static_cast<std::size_t>(p_.heads))},
                                                        {"held", static_cast<double>(Br * Bc)}, {"full", static_cast<double>(p_.n * p_.m)}},
                                                       {}});
    }

    // The tiled gradients against the untiled ones, where those fit.
    void compare_with_untiled() {
        tiled_note(std::min(grad_.tiled->block_q, p_.n), std::min(grad_.tiled->block_k, p_.m), tiles_skipped_);
        trace_.numbers.push_back({"tiles_computed", static_cast<double>(tiles_computed_)});
        trace_.numbers.push_back({"tiles_skipped", static_cast<double>(tiles_skipped_)});
        trace_.numbers.push_back({"scores_held", static_cast<double>(std::min(grad_.tiled->block_q, p_.n) * std::min(grad_.tiled->block_k, p_.m))});
        trace_.numbers.push_back({"scores_full", static_cast<double>(p_.n * p_.m)});
        if (p_.n * p_.m > 4194304) {
            trace_.notes.push_back({NoteKind::grad_tiled_unchecked, {{"n", static_cast<double>(p_.n)}, {"m", static_cast<double>(p_.m)}}, {}});
            return;
        }
        GradOptions untiled = grad_;
        untiled.tiled.reset();
        const Trace full = pipeline_grad(p_, options_, untiled);
        double most = 0;
        for (const Step& step : trace_.steps) {
            if (step.tile || step.name == StepName::lse || step.name == StepName::delta || step.name == StepName::grad_out) continue;
            const Step* want = full.find(step.name, step.head, step.batch, std::nullopt, std::nullopt);
            if (!want) continue;
            for (std::size_t k = 0; k < step.values.data().size(); ++k)
                most = std::max(most, value_difference(step.values.data()[k], want->values.data()[k]));
        }
        trace_.numbers.push_back({"max_abs_diff_vs_full", most});
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
                jacobian(r, c) = round_to(dtype_, f((r == c ? a(i, r) : 0.0) - f(a(i, r) * a(i, c))));
                squares += jacobian(r, c) * jacobian(r, c);
            }
        steps_.record(StepName::jacobian, fmt::format("diag(A[{}]) − A[{}] A[{}]ᵀ, ‖J‖_F = {:.6g}", i, i, i, std::sqrt(squares)), std::move(jacobian), h, b,
                      key_labels(p_), key_labels(p_));
        if (b == 0) trace_.numbers.push_back({p_.heads == 1 ? "jacobian_norm" : fmt::format("jacobian_norm_head_{}", h), std::sqrt(squares)});
    }

    // From grad_q, grad_k, grad_v to the inputs: W, b and X (X_source).
    void record_input_gradients(std::size_t b, const Matrix& grad_q, const Matrix& grad_k, const Matrix& grad_v) {
        const Matrix& x = p_.X[b];
        const Matrix& source = p_.cross_attention() ? p_.X_source[b] : x;
        add_into(grad_W_[0], times(x.transposed(), grad_q, compute_), compute_);
        add_into(grad_W_[1], times(source.transposed(), grad_k, compute_), compute_);
        add_into(grad_W_[2], times(source.transposed(), grad_v, compute_), compute_);
        add_into(grad_b_[0], column_sums(grad_q, compute_), compute_);
        add_into(grad_b_[1], column_sums(grad_k, compute_), compute_);
        add_into(grad_b_[2], column_sums(grad_v, compute_), compute_);
        Matrix from_q = times_transposed(grad_q, *p_.W_Q, compute_);
        Matrix from_kv = times_transposed(grad_k, *p_.W_K, compute_);
        add_into(from_kv, times_transposed(grad_v, *p_.W_V, compute_), compute_);
        if (p_.cross_attention()) {
            steps_.record(StepName::grad_x, "dQ W_Qᵀ", rounded(std::move(from_q), dtype_), std::nullopt, b, query_labels(p_));
            steps_.record(StepName::grad_x_source, "dK W_Kᵀ + dV W_Vᵀ", rounded(std::move(from_kv), dtype_), std::nullopt, b, p_.source_tokens);
        } else {
            add_into(from_q, from_kv, compute_);  // dQ W_Qᵀ + (dK W_Kᵀ + dV W_Vᵀ)
            steps_.record(StepName::grad_x, "dQ W_Qᵀ + dK W_Kᵀ + dV W_Vᵀ", rounded(std::move(from_q), dtype_), std::nullopt, b, query_labels(p_));
        }
    }

    // The weights are shared by the sequences of a batch: their gradients sum over it.
    void record_weight_gradients() {
        const std::string over = p_.batch > 1 ? fmt::format(", summed over the {} sequences", p_.batch) : "";
        const auto record = [&](StepName name, const std::string& formula, Matrix& value) {
            if (value.empty()) return;
            Step step;
            step.name = name;
            step.formula = formula + over;
            step.values = rounded(std::move(value), dtype_);  // summed in the arithmetic type, stored once
            trace_.steps.push_back(std::move(step));
        };
        if (p_.W_O) record(StepName::grad_W_O, "O_catᵀ dY", grad_W_O_);
        if (p_.b_O) record(StepName::grad_b_O, "Σ_i dY_i", grad_b_O_);
        if (!p_.from_tokens()) return;
        record(StepName::grad_W_Q, "Xᵀ dQ", grad_W_[0]);
        record(StepName::grad_W_K, std::string(p_.cross_attention() ? "X_sourceᵀ" : "Xᵀ") + " dK", grad_W_[1]);
        record(StepName::grad_W_V, std::string(p_.cross_attention() ? "X_sourceᵀ" : "Xᵀ") + " dV", grad_W_[2]);
        if (p_.b_Q) record(StepName::grad_b_Q, "Σ_i dQ_i", grad_b_[0]);
        if (p_.b_K) record(StepName::grad_b_K, "Σ_j dK_j", grad_b_[1]);
        if (p_.b_V) record(StepName::grad_b_V, "Σ_j dV_j", grad_b_[2]);
    }

    GradOptions grad_;
    const Dtype compute_ = compute_dtype(dtype_);
    Trace forward_;
    std::size_t tiles_computed_ = 0, tiles_skipped_ = 0;
    AttentionStats fused_stats_;
    Matrix grad_W_O_, grad_b_O_, grad_W_[3], grad_b_[3];
};

}  // namespace

Trace pipeline_grad(const Problem& problem, const RunOptions& options, const GradOptions& grad) {
    if (problem.mla) throw InputError(fmt::format("{}: grad does not trace MLA problems yet (their forward pass is run's)", problem.file));
    if (problem.qk_norm) throw InputError(fmt::format("{}: grad does not differentiate through qk-norm yet (its forward pass is run's)", problem.file));
    if (grad.tiled) {
        validate_tiles(*grad.tiled);
        if (grad.row) throw InputError("⟦row⟧ needs the whole weights of a row, which the tiled backward never holds: leave out ⟦tiled⟧ or ⟦row⟧");
        refuse_train_dropout(problem, "the tiled backward");
    }
    if (grad.fast) {
        if (grad.tiled) throw InputError("⟦fast⟧ is the fused backward and ⟦tiled⟧ the step-by-step one: choose one");
        if (grad.row) throw InputError("⟦row⟧ needs the whole weights of a row, which the fused backward never holds: leave out ⟦fast⟧ or ⟦row⟧");
        refuse_train_dropout(problem, "the fused backward");
        if (is_half(options.dtype))
            throw InputError(fmt::format("{}: the fused backward computes in f64 or f32 only, and {} is traced step by step: leave out ⟦fast⟧ or use ⟦dtype⟧ f32",
                                         problem.file, dtype_name(options.dtype)));
    }
    if (grad.row && *grad.row >= problem.n)
        throw InputError(fmt::format("⟦row⟧ {}: the problem has {} quer{} (0 to {})", *grad.row, problem.n, problem.n == 1 ? "y" : "ies", problem.n - 1));
    return GradPipeline(problem, options, grad).run();
}

}  // namespace attn_trace
