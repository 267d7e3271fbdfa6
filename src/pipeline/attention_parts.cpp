#include "attn_trace/attention_parts.hpp"
#include "attn_trace/random.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <type_traits>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"

namespace attn_trace {

namespace {

constexpr double pi = 3.14159265358979323846;

template <typename T, typename F>
Matrix map_elements(const Matrix& a, F f) {
    Matrix out(a.rows(), a.cols());
    for (std::size_t i = 0; i < a.data().size(); ++i) out.data()[i] = static_cast<double>(f(static_cast<T>(a.data()[i])));
    return out;
}

// a[rows.first : rows.first + rows.count, :]
Matrix rows_of(const Matrix& a, QueryRows rows) {
    Matrix out(rows.count, a.cols());
    std::copy(a.row(rows.first), a.row(rows.first) + rows.count * a.cols(), out.row(0));
    return out;
}

// An empty row is the mask's: every key −∞ in M, whatever the scores overflowed to.
bool every_key_blocked(const Matrix& mask, std::size_t row) {
    return std::all_of(mask.row(row), mask.row(row) + mask.cols(), [](double x) { return x == -std::numeric_limits<double>::infinity(); });
}

// In a half type (docs/PROBLEM.md#dtype-half-precision) exp is stored rounded, row_sum is
// the f32 sum of the stored exp values and stays f32, and weights = exp / row_sum is
// rounded once; z − max is formed in T and never stored. Without the max shift exp is
// exp(z) itself: what overflows where the shift would not (docs/COMMANDS.md#precision).
template <typename T>
SoftmaxSteps softmax_in(const Matrix& z, EmptyRows policy, Dtype dtype, bool max_shift, const Matrix* mask) {
    const std::size_t rows = z.rows(), cols = z.cols();
    SoftmaxSteps s{Matrix(rows, 1), Matrix(rows, cols), Matrix(rows, 1), Matrix(rows, cols), {}};
    for (std::size_t i = 0; i < rows; ++i) {
        // max subtraction: e^(z − max) never overflows and gives the same quotients.
        // A NaN (a non-finite input, allowed) makes the max NaN: std::max would skip it
        // and could call the row "empty" when it is not.
        T max = -std::numeric_limits<T>::infinity();
        for (std::size_t j = 0; j < cols; ++j) max = std::isnan(z(i, j)) || std::isnan(max) ? std::numeric_limits<T>::quiet_NaN() : std::max(max, static_cast<T>(z(i, j)));
        s.row_max(i, 0) = static_cast<double>(max);
        if (mask ? every_key_blocked(*mask, i) : max == -std::numeric_limits<T>::infinity()) {
            // No visible key: 0/0. The policy says what the row becomes.
            s.empty_rows.push_back(i);
            const double fill = policy == EmptyRows::nan ? std::numeric_limits<double>::quiet_NaN() : 0.0;
            for (std::size_t j = 0; j < cols; ++j) s.weights(i, j) = fill;
            continue;
        }
        const T shift = max_shift ? max : T(0);
        T sum = 0;
        for (std::size_t j = 0; j < cols; ++j) {
            const T zij = static_cast<T>(z(i, j));
            // A blocked key (−∞) contributes exactly 0.
            const T e = zij == -std::numeric_limits<T>::infinity() ? T(0) : static_cast<T>(round_to(dtype, std::exp(zij - shift)));
            s.exp(i, j) = static_cast<double>(e);
            sum += e;
        }
        s.row_sum(i, 0) = static_cast<double>(sum);
        for (std::size_t j = 0; j < cols; ++j) s.weights(i, j) = round_to(dtype, static_cast<double>(static_cast<T>(s.exp(i, j)) / sum));
    }
    return s;
}

}  // namespace

Matrix affine(const Matrix& x, const Matrix& w, const std::optional<std::vector<double>>& bias, const Backend& backend,
              Dtype dtype) {
    // A half type adds the bias to the f32 product before its one rounding, as addmm does.
    Matrix out = backend.multiply(x, w, bias ? compute_dtype(dtype) : dtype);
    if (bias)
        for (std::size_t i = 0; i < out.rows(); ++i)
            for (std::size_t j = 0; j < out.cols(); ++j) {
                out(i, j) = round_to(dtype, compute_dtype(dtype) == Dtype::f32 ? static_cast<double>(static_cast<float>(out(i, j)) + static_cast<float>((*bias)[j]))
                                                                               : out(i, j) + (*bias)[j]);
            }
    return out;
}

std::optional<Problem> stored_in(const Problem& problem, Dtype dtype) {
    if (!is_half(dtype)) return std::nullopt;
    Problem p = problem;
    const auto store = [dtype](auto& values) {
        if constexpr (std::is_same_v<std::decay_t<decltype(values)>, Matrix>) values = rounded(std::move(values), dtype);
        else
            for (double& x : values) x = round_to(dtype, x);
    };
    for (Matrix& x : p.X) store(x);
    for (Matrix& x : p.X_source) store(x);
    for (auto* m : {&p.W_Q, &p.W_K, &p.W_V, &p.W_O, &p.Q, &p.K, &p.V})
        if (*m) store(**m);
    for (auto* b : {&p.b_Q, &p.b_K, &p.b_V, &p.b_O})
        if (*b) store(**b);
    if (p.qk_norm) {
        store(p.qk_norm->q_weight);
        store(p.qk_norm->k_weight);
    }
    if (p.mla) {
        for (Matrix* m : {&p.mla->W_DKV, &p.mla->W_UK, &p.mla->W_UV}) store(*m);
        for (auto* m : {&p.mla->W_DQ, &p.mla->W_UQ, &p.mla->W_QR, &p.mla->W_KR})
            if (*m) store(**m);
        for (auto* norm : {&p.mla->c_kv_norm, &p.mla->c_q_norm})
            if (*norm) store((*norm)->weight);
    }
    return p;
}

Projections project(const Problem& p, std::size_t batch, const Backend& backend, Dtype dtype) {
    return project(p, batch, backend, dtype, all_query_rows(p));
}

MlaParts mla_parts(const Problem& p, std::size_t batch, const Backend& backend, Dtype dtype, QueryRows rows) {
    const Mla& mla = *p.mla;
    const Matrix x = rows_of(p.X[batch], rows);
    const Matrix& source = p.cross_attention() ? p.X_source[batch] : p.X[batch];
    const std::optional<std::vector<double>> no_bias;
    MlaParts parts;
    parts.c_kv = affine(source, mla.W_DKV, no_bias, backend, dtype);
    if (mla.c_kv_norm) {
        parts.c_kv_raw = std::move(parts.c_kv);
        parts.c_kv = rms_norm(parts.c_kv_raw, mla.c_kv_norm->weight, mla.c_kv_norm->eps, 0.0, mla.d_c, dtype);
    }
    parts.k = affine(parts.c_kv, mla.W_UK, no_bias, backend, dtype);
    parts.v = affine(parts.c_kv, mla.W_UV, no_bias, backend, dtype);
    if (mla.W_DQ) {
        parts.c_q = affine(x, *mla.W_DQ, no_bias, backend, dtype);
        if (mla.c_q_norm) {
            parts.c_q_raw = std::move(parts.c_q);
            parts.c_q = rms_norm(parts.c_q_raw, mla.c_q_norm->weight, mla.c_q_norm->eps, 0.0, mla.d_cq, dtype);
        }
        parts.q = affine(parts.c_q, *mla.W_UQ, no_bias, backend, dtype);
    } else {
        parts.q = affine(x, *p.W_Q, p.b_Q, backend, dtype);
    }
    if (mla.d_r == 0) return parts;
    const auto all_positions = query_positions(p);
    const std::vector<double> positions(all_positions.begin() + static_cast<long>(rows.first),
                                        all_positions.begin() + static_cast<long>(rows.first + rows.count));
    const Matrix q_rope = affine(mla.W_DQ ? parts.c_q : x, *mla.W_QR, no_bias, backend, dtype);
    parts.q_rope = Matrix(q_rope.rows(), q_rope.cols());
    for (int h = 0; h < p.heads; ++h) {  // every head's part turned on its own
        const std::size_t first = static_cast<std::size_t>(h) * mla.d_r;
        const Matrix turned = apply_rope(q_rope.columns(first, mla.d_r), mla.rope, positions, dtype);
        for (std::size_t i = 0; i < turned.rows(); ++i) std::copy(turned.row(i), turned.row(i) + mla.d_r, parts.q_rope.row(i) + first);
    }
    parts.k_rope = apply_rope(affine(source, *mla.W_KR, no_bias, backend, dtype), mla.rope, key_positions(p), dtype);
    return parts;
}

Projections mla_projections(const Problem& p, const MlaParts& parts) {
    const std::size_t H = static_cast<std::size_t>(p.heads), d = p.mla->d_content, d_r = p.mla->d_r;
    Projections out{Matrix(parts.q.rows(), H * (d + d_r)), Matrix(parts.k.rows(), H * (d + d_r)), parts.v};
    for (std::size_t h = 0; h < H; ++h) {
        for (std::size_t i = 0; i < parts.q.rows(); ++i) {
            std::copy(parts.q.row(i) + h * d, parts.q.row(i) + (h + 1) * d, out.q.row(i) + h * (d + d_r));
            if (d_r) std::copy(parts.q_rope.row(i) + h * d_r, parts.q_rope.row(i) + (h + 1) * d_r, out.q.row(i) + h * (d + d_r) + d);
        }
        for (std::size_t j = 0; j < parts.k.rows(); ++j) {
            std::copy(parts.k.row(j) + h * d, parts.k.row(j) + (h + 1) * d, out.k.row(j) + h * (d + d_r));
            if (d_r) std::copy(parts.k_rope.row(j), parts.k_rope.row(j) + d_r, out.k.row(j) + h * (d + d_r) + d);  // one key part for all heads
        }
    }
    return out;
}

Projections project(const Problem& p, std::size_t batch, const Backend& backend, Dtype dtype, QueryRows rows) {
    if (p.mla) return mla_projections(p, mla_parts(p, batch, backend, dtype, rows));
    const bool all = rows.first == 0 && rows.count == p.n;
    if (!p.from_tokens()) return {rounded(all ? *p.Q : rows_of(*p.Q, rows), dtype), rounded(*p.K, dtype), rounded(*p.V, dtype)};
    const Matrix& x = p.X[batch];
    const Matrix& source = p.cross_attention() ? p.X_source[batch] : x;
    // Each row of X W_Q + b_Q depends on its own row of X only. (An if, not ?:, so
    // that X itself is not copied when every row is wanted.)
    Matrix q;
    if (all) q = affine(x, *p.W_Q, p.b_Q, backend, dtype);
    else q = affine(rows_of(x, rows), *p.W_Q, p.b_Q, backend, dtype);
    Projections out{std::move(q), affine(source, *p.W_K, p.b_K, backend, dtype), affine(source, *p.W_V, p.b_V, backend, dtype)};
    if (p.qk_norm) {
        const QkNorm& norm = *p.qk_norm;
        out.q_raw = std::move(out.q);
        out.k_raw = std::move(out.k);
        out.q = rms_norm(out.q_raw, norm.q_weight, norm.eps, norm.weight_offset, norm.per_head ? p.d_k : out.q_raw.cols(), dtype);
        out.k = rms_norm(out.k_raw, norm.k_weight, norm.eps, norm.weight_offset, norm.per_head ? p.d_k : out.k_raw.cols(), dtype);
    }
    return out;
}

Matrix rms_norm(const Matrix& x, const std::vector<double>& weight, double eps, double weight_offset, std::size_t group, Dtype dtype) {
    Matrix out(x.rows(), x.cols());
    const bool repeats = weight.size() == group;
    for (std::size_t r = 0; r < x.rows(); ++r)
        for (std::size_t first = 0; first < x.cols(); first += group) {
            double squares = 0;
            for (std::size_t c = first; c < first + group; ++c) squares += x(r, c) * x(r, c);
            // In a half type the norm runs in f32 and only its result is rounded to the type.
            const Dtype inner = compute_dtype(dtype);
            const double inverse_rms = round_to(inner, 1.0 / std::sqrt(squares / static_cast<double>(group) + eps));
            for (std::size_t c = first; c < first + group; ++c)
                out(r, c) = round_to(dtype, round_to(inner, round_to(inner, x(r, c) * inverse_rms) * (weight_offset + weight[repeats ? c - first : c])));
        }
    return out;
}

int kv_head_of(const Problem& p, int head) { return head / (p.heads / p.kv_heads); }

std::vector<double> query_positions(const Problem& p) {
    if (!p.positions.empty()) return p.positions;
    std::vector<double> out(p.n);
    const double offset = p.m > p.n ? static_cast<double>(p.m - p.n) : 0.0;
    for (std::size_t i = 0; i < p.n; ++i) out[i] = offset + static_cast<double>(i);
    return out;
}

std::vector<double> key_positions(const Problem& p) {
    if (!p.source_positions.empty()) return p.source_positions;
    std::vector<double> out(p.m);
    for (std::size_t j = 0; j < p.m; ++j) out[j] = static_cast<double>(j);
    return out;
}

std::size_t rotary_dims(const Rope& rope, std::size_t d) { return rope.rotary_dims ? rope.rotary_dims : d; }

double rope_theta(const Rope& rope, std::size_t pair, std::size_t d) {
    if (!rope.theta.empty()) return rope.theta[pair];  // resolved with the problem
    return rope.angles_deg.empty() ? std::pow(rope.base, -2.0 * static_cast<double>(pair) / static_cast<double>(rotary_dims(rope, d))) : rope.angles_deg[pair] * pi / 180.0;
}

std::array<std::size_t, 2> rope_pair(const Rope& rope, std::size_t pair, std::size_t d) {
    const std::size_t turned = rotary_dims(rope, d);
    return rope.style == Rope::Style::interleaved ? std::array<std::size_t, 2>{2 * pair, 2 * pair + 1} : std::array<std::size_t, 2>{pair, pair + turned / 2};
}

Matrix apply_rope(const Matrix& x, const Rope& rope, const std::vector<double>& positions, Dtype dtype) {
    const std::size_t d = x.cols(), pairs = rotary_dims(rope, d) / 2;
    Matrix out = x;  // columns past the rotary part (partial rotary) pass unchanged
    for (std::size_t r = 0; r < x.rows(); ++r) {
        for (std::size_t p = 0; p < pairs; ++p) {
            const double angle = positions[r] * rope_theta(rope, p, d);
            const auto [a, b] = rope_pair(rope, p, d);
            // yarn's attention factor scales cos and sin alike (1 otherwise); a half type
            // keeps them in f32, as the rotation is computed in f32.
            const Dtype inner = compute_dtype(dtype);
            const double c = round_to(inner, std::cos(angle) * rope.attention_factor), s = round_to(inner, std::sin(angle) * rope.attention_factor);
            // (x_a, x_b) -> (x_a cos − x_b sin, x_a sin + x_b cos)
            out(r, a) = round_to(dtype, x(r, a) * c - x(r, b) * s);
            out(r, b) = round_to(dtype, x(r, a) * s + x(r, b) * c);
        }
    }
    return out;
}

Matrix head_mask(const Problem& p, std::size_t batch, int head) { return head_mask(p, batch, head, all_query_rows(p)); }

Matrix head_mask(const Problem& p, std::size_t batch, int head, QueryRows rows) {
    const std::size_t key_length = p.lengths.empty() ? p.m : p.lengths[batch];
    const double slope = p.alibi_slopes ? (*p.alibi_slopes)[static_cast<std::size_t>(head)] : 0.0;
    return build_mask_rows(p.masks, p.n, p.m, key_length, slope, rows.first, rows.count);
}

SoftmaxSteps softmax_rows(const Matrix& masked, EmptyRows policy, Dtype dtype, bool max_shift, const Matrix* mask) {
    return compute_dtype(dtype) == Dtype::f32 ? softmax_in<float>(masked, policy, dtype, max_shift, mask)
                                              : softmax_in<double>(masked, policy, dtype, max_shift, mask);
}

Matrix add_elementwise(const Matrix& a, const Matrix& b, Dtype dtype) {
    Matrix out(a.rows(), a.cols());
    for (std::size_t i = 0; i < a.data().size(); ++i) out.data()[i] = round_to(dtype, a.data()[i] + b.data()[i]);
    return out;
}

Matrix scale(const Matrix& a, double s, Dtype dtype) {
    if (compute_dtype(dtype) == Dtype::f32) {
        const float sf = static_cast<float>(s);  // s is an f32 constant
        return rounded(map_elements<float>(a, [sf](float x) { return sf * x; }), dtype);
    }
    return map_elements<double>(a, [s](double x) { return s * x; });
}

Matrix soft_cap(const Matrix& a, double cap, Dtype dtype) {
    if (compute_dtype(dtype) == Dtype::f32) {
        const float c = static_cast<float>(cap);
        return rounded(map_elements<float>(a, [c](float x) { return c * std::tanh(x / c); }), dtype);
    }
    return map_elements<double>(a, [cap](double x) { return cap * std::tanh(x / cap); });
}

DropoutDraws::DropoutDraws(const Problem& p) : p_(p), generator_(p.dropout->seed) {}

Matrix DropoutDraws::keep(std::size_t batch, int head, QueryRows rows) {
    const std::size_t start = (batch * static_cast<std::size_t>(p_.heads) + static_cast<std::size_t>(head)) * p_.n * p_.m + rows.first * p_.m;
    if (start < position_) {
        generator_ = PortableRandom(p_.dropout->seed);
        position_ = 0;
    }
    for (; position_ < start; ++position_) (void)generator_.uniform();
    Matrix keep(rows.count, p_.m);
    for (double& x : keep.data()) x = generator_.uniform() >= p_.dropout->p ? 1.0 : 0.0;
    position_ += keep.data().size();
    return keep;
}

void refuse_train_dropout(const Problem& p, const std::string& what) {
    if (p.dropout && p.dropout->train)
        throw InputError(fmt::format("{}: dropout in train mode is traced by the full trace (run) only, not by {}: switch it off with ⟦eval⟧ "
                                     "(or \"mode\": \"eval\") to compute without it",
                                     p.file, what));
}

Matrix apply_dropout(const Matrix& weights, const Matrix& keep, double p, Dtype dtype) {
    Matrix kept(weights.rows(), weights.cols());
    for (std::size_t i = 0; i < kept.data().size(); ++i) kept.data()[i] = weights.data()[i] * keep.data()[i];  // exact: keep is 0 or 1
    return scale(kept, 1.0 / (1.0 - p), dtype);  // 1/(1 − p) is an f32 constant in a half type, as s is
}

TraceSummary summarise_problem(const Problem& p, Dtype dtype, const std::string& backend_name) {
    std::string mask = describe_masks(p.masks);
    if (!p.lengths.empty()) mask = p.masks.empty() ? "lengths" : mask + " + lengths";  // not "nonelengths"
    std::optional<TraceSummary::Dropout> dropout;
    if (p.dropout) dropout = TraceSummary::Dropout{p.dropout->p, p.dropout->seed, p.dropout->train};
    // One value, every field named once and in TraceSummary's own order (C++20 refuses
    // designators out of order), so a field read into the wrong place shows at a glance.
    return {.title = p.title,
            .batch = p.batch, .n = p.n, .m = p.m, .d_model = p.d_model,
            .heads = p.heads, .kv_heads = p.kv_heads,
            .d_k = p.d_k, .d_v = p.d_v,
            .scale = round_to(compute_dtype(dtype), p.scale_factor()),  // an f32 constant in a half type
            .mask = std::move(mask),
            .dtype = dtype_name(dtype),
            .backend = backend_name,
            .empty_rows = empty_rows_name(p.empty_rows),
            .mask_spec = recorded_mask_spec(p),
            .dropout = dropout,
            .model = p.model,
            .recorded = true};
}

std::vector<Note> problem_notes(const Problem& p, Dtype dtype) {
    std::vector<Note> notes;
    // f16 and bf16 hold different sets of numbers: a checkpoint in the one, run in the other, is rounded.
    if (p.checkpoint_dtype && is_half(*p.checkpoint_dtype) && is_half(dtype) && *p.checkpoint_dtype != dtype)
        notes.push_back({NoteKind::checkpoint_rounded, {}, {{"checkpoint", dtype_name(*p.checkpoint_dtype)}, {"dtype", dtype_name(dtype)}}});
    for (const auto& spec : p.masks)
        if (spec.is_causal() && p.n != p.m)
            notes.push_back({NoteKind::causal_alignment,
                             {{"n", static_cast<double>(p.n)}, {"m", static_cast<double>(p.m)}},
                             {{"alignment", spec.kind == MaskSpec::Kind::causal_upper_left ? "upper_left" : "bottom_right"}}});
    if (!p.first_nonfinite.empty()) notes.push_back({NoteKind::nonfinite_inputs, {}, {{"first", p.first_nonfinite}}});
    // A mask that reads like the other kind of mask (docs/PROBLEM.md#masks-written-the-wrong-way-round).
    for (const auto& spec : p.masks)
        if (const auto mixup = mask_mixup(spec, p.n, p.m))
            notes.push_back({NoteKind::mask_mixup,
                             {{"kind", static_cast<double>(mixup->kind)}, {"query", static_cast<double>(mixup->query)}},
                             {{"where", mixup->where}, {"given", mixup->given}}});
    if (p.kv_heads < p.heads) notes.push_back({NoteKind::kv_sharing, {{"heads", p.heads}, {"kv_heads", p.kv_heads}}, {}});
    if (p.mla)
        notes.push_back({NoteKind::mla,
                         {{"d_c", static_cast<double>(p.mla->d_c)}, {"d_r", static_cast<double>(p.mla->d_r)}, {"d_content", static_cast<double>(p.mla->d_content)},
                          {"d_k", static_cast<double>(p.d_k)}, {"auto_scale", p.scale.kind == Scale::Kind::automatic ? 1.0 : 0.0}},
                         {}});
    if (p.dropout)
        notes.push_back({p.dropout->train ? NoteKind::dropout_train : NoteKind::dropout_eval, {{"p", p.dropout->p}, {"seed", static_cast<double>(p.dropout->seed)}}, {}});
    return notes;
}

const std::vector<std::string>& query_labels(const Problem& p) { return p.tokens; }

const std::vector<std::string>& key_labels(const Problem& p) {
    if (!p.source_tokens.empty()) return p.source_tokens;
    static const std::vector<std::string> none;
    return p.cross_attention() || p.n != p.m ? none : p.tokens;
}

std::string in_head_of_batch(const Problem& p, int head, std::size_t batch) {
    return (p.heads > 1 ? fmt::format(" in head {}", head) : "") + (p.batched ? fmt::format(" of batch {}", batch) : "");
}

void fail_empty_row(const Problem& p, std::size_t row, int head, std::size_t batch) {
    const std::string who = p.tokens.empty() ? fmt::format("query {}", row) : fmt::format("query {} (\"{}\")", row, p.tokens[row]);
    const std::string where = in_head_of_batch(p, head, batch);
    // A mask of the wrong polarity is the likelier cause than a row meant to be empty: named first.
    std::string mixup;
    for (const auto& spec : p.masks)
        if (const auto found = mask_mixup(spec, p.n, p.m); found && mixup.empty()) {
            mixup = " " + mask_mixup_text(*found) + ".";
            mixup[1] = static_cast<char>(std::toupper(static_cast<unsigned char>(mixup[1])));  // a sentence of its own
        }
    throw InputError(fmt::format(
        "{}: {}{} can read no key: every key is masked, so its softmax is 0/0.{} Choose a policy: "
        "\"empty_rows\": \"zero\" (PyTorch >= 2.5 and FlashAttention return zeros) or \"nan\" (older PyTorch), "
        "or ⟦empty_rows⟧ zero|nan",
        p.file, who, where, mixup));
}

}  // namespace attn_trace
