// The tiled pass with online softmax (docs/COMMANDS.md#tiled), in the symbols of the
// FlashAttention papers: query blocks of Br rows, key tiles of Bc keys, and per
// query row the running max m, the running sum ℓ and the running weighted sum u.
// The n × m scores are never needed at once: only one Br × Bc tile of them.
#include <algorithm>
#include <array>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/online_softmax.hpp"
#include "pipeline_base.hpp"

namespace attn_trace {

namespace {

// The running state of one query block: m (Br, 1), ℓ (Br, 1), u (Br, d_v),
// and the rescale factor e^(m_old − m_new) (Br, 1) of the last tile.
struct OnlineSoftmax {
    Matrix m, l, u, rescale;
    // Whether the mask lets the row read some key: a row is empty by its mask, not by ℓ = 0,
    // which a half type's scores all overflowing to −∞ also give (then u / ℓ = 0/0 = NaN).
    std::vector<bool> reads_a_key;
    OnlineSoftmax(std::size_t rows, std::size_t d_v)
        : m(rows, 1, -std::numeric_limits<double>::infinity()), l(rows, 1), u(rows, d_v), rescale(rows, 1, 1.0), reads_a_key(rows, false) {}
};

// One tile's update of the state, in T (float for f32, double for f64), by the one
// definition of the update (online_softmax.hpp), which also says why a row that has
// read no key yet gets rescale 1 and weights 0.
// z (Br, Bc) the tile's masked scores; v (Bc, d_v) the tile's values. In a half type
// (docs/PROBLEM.md#dtype-half-precision) P̃ is rounded to the type before P̃ V, as exp is,
// and the state m, ℓ, u and the rescale stay f32.
template <typename T>
void absorb_tile(OnlineSoftmax& state, const Matrix& z, const Matrix& v, const Backend& backend, Dtype dtype) {
    Matrix p_tilde(z.rows(), z.cols());
    for (std::size_t i = 0; i < z.rows(); ++i) {
        const T m_old = static_cast<T>(state.m(i, 0));
        T m_new = m_old;
        for (std::size_t j = 0; j < z.cols(); ++j) m_new = online_softmax::raised_max(m_new, static_cast<T>(z(i, j)));
        const T rescale = online_softmax::rescale(m_old, m_new);
        T row_sum = 0;
        for (std::size_t j = 0; j < z.cols(); ++j) {
            const T p = static_cast<T>(round_to(dtype, static_cast<double>(online_softmax::weight(static_cast<T>(z(i, j)), m_new))));
            p_tilde(i, j) = static_cast<double>(p);
            row_sum += p;
        }
        state.l(i, 0) = static_cast<double>(online_softmax::rescaled_sum(static_cast<T>(state.l(i, 0)), rescale, row_sum));
        state.m(i, 0) = static_cast<double>(m_new);
        state.rescale(i, 0) = static_cast<double>(rescale);
    }
    // u_new = e^(m_old − m_new) u_old + P̃ V_tile
    const Matrix p_tilde_v = backend.multiply(p_tilde, v, compute_dtype(dtype));
    for (std::size_t i = 0; i < z.rows(); ++i)
        for (std::size_t c = 0; c < v.cols(); ++c)
            state.u(i, c) = static_cast<double>(
                online_softmax::rescaled_sum(static_cast<T>(state.u(i, c)), static_cast<T>(state.rescale(i, 0)), static_cast<T>(p_tilde_v(i, c))));
}

// out = u / ℓ, in T. A row whose mask lets it read no key: `empty` receives it and the
// policy's value (0 or NaN) fills it.
template <typename T>
Matrix finish_rows(const OnlineSoftmax& state, EmptyRows policy, std::vector<std::size_t>& empty, std::size_t first_row, Dtype dtype) {
    Matrix out(state.u.rows(), state.u.cols());
    const double fill = policy == EmptyRows::nan ? std::numeric_limits<double>::quiet_NaN() : 0.0;
    for (std::size_t i = 0; i < out.rows(); ++i) {
        if (!state.reads_a_key[i]) empty.push_back(first_row + i);
        for (std::size_t c = 0; c < out.cols(); ++c)
            out(i, c) = !state.reads_a_key[i] ? fill : round_to(dtype, static_cast<double>(static_cast<T>(state.u(i, c)) / static_cast<T>(state.l(i, 0))));
    }
    return out;
}

bool every_score_masked(const Matrix& mask_tile) {
    for (double x : mask_tile.data())
        if (x != -std::numeric_limits<double>::infinity()) return false;
    return true;
}

class TiledPipeline : PipelineBase {
public:
    TiledPipeline(const Problem& problem, const RunOptions& options, const TiledOptions& tiled)
        : PipelineBase(problem, options, "tiled"), Br_(std::min(tiled.block_q, problem.n)), Bc_(std::min(tiled.block_k, problem.m)) {
        validate_tiles(tiled);
    }

    Trace run() {
        trace_.notes = problem_notes(p_, dtype_);
        for (std::size_t b = 0; b < p_.batch; ++b) run_sequence(b);
        const std::size_t Tr = (p_.n + Br_ - 1) / Br_, Tc = (p_.m + Bc_ - 1) / Bc_;
        const std::size_t heads_run = p_.batch * static_cast<std::size_t>(p_.heads);
        // The legend first: "tile [0, 1]" and "K[2…3]" must not read as GQA's KV head K_1.
        skipped_notes_.insert(skipped_notes_.begin(), Note{NoteKind::tile_legend, {}, {}});
        if (tiles_skipped_ > max_skipped_lines)
            skipped_notes_.push_back({NoteKind::more_tiles_skipped, {{"count", static_cast<double>(tiles_skipped_ - max_skipped_lines)}}, {}});
        trace_.notes.insert(trace_.notes.begin(), skipped_notes_.begin(), skipped_notes_.end());
        trace_.notes.insert(trace_.notes.begin(), Note{NoteKind::tiled,
                                                       {{"block_q", static_cast<double>(Br_)}, {"block_k", static_cast<double>(Bc_)},
                                                        {"Tr", static_cast<double>(Tr)}, {"Tc", static_cast<double>(Tc)},
                                                        {"skipped", static_cast<double>(tiles_skipped_)}, {"heads_run", static_cast<double>(heads_run)},
                                                        {"held", static_cast<double>(Br_ * Bc_)}, {"full", static_cast<double>(p_.n * p_.m)}},
                                                       {}});
        // Before the comparison computes the full trace, so that tiled's own overflow is the one reported.
        check_overflow(trace_, p_, dtype_);
        trace_.numbers = {{"max_abs_diff_vs_full", max_abs_diff_vs(trace_, pipeline_full(p_, options_))},
                          {"scores_held", static_cast<double>(Br_ * Bc_)},
                          {"scores_full", static_cast<double>(p_.n * p_.m)},
                          {"tiles_computed", static_cast<double>(tiles_computed_)},
                          {"tiles_skipped", static_cast<double>(tiles_skipped_)}};
        return std::move(trace_);
    }

    // Only query block qb, key tiles 0 … last_tile (explain): their tile steps.
    Trace run_block_of(std::size_t b, std::size_t qb, std::size_t last_tile) {
        const Projections projections = project(p_, b, *backend_, dtype_, {qb * Br_, std::min(Br_, p_.n - qb * Br_)});
        for (int h = 0; h < p_.heads; ++h) {
            const HeadInputs in = head_inputs(p_, projections, h, dtype_, qb * Br_);
            run_block(in, 0, qb, last_tile, h, b);
        }
        return finish();
    }

private:
    void run_sequence(std::size_t b) {
        const Projections projections = project(p_, b, *backend_, dtype_);
        std::vector<Matrix> outs;
        for (int h = 0; h < p_.heads; ++h) {
            std::vector<std::size_t> empty_rows;
            Matrix out = run_head(head_inputs(p_, projections, h, dtype_), h, b, empty_rows);
            steps_.note_empty_rows(empty_rows, h, b);
            steps_.record(StepName::out, "u / ℓ after the last tile of each query block", out, h, b, query_labels(p_));
            outs.push_back(std::move(out));
        }
        steps_.record_concat_and_final(outs, b, *backend_, dtype_);
    }

    // in: q (n, d_k), k (m, d_k), v (m, d_v) -> out (n, d_v)
    Matrix run_head(const HeadInputs& in, int h, std::size_t b, std::vector<std::size_t>& empty_rows) {
        Matrix out(p_.n, p_.d_v);
        const std::size_t last_tile = (p_.m + Bc_ - 1) / Bc_ - 1;
        for (std::size_t qb = 0, i0 = 0; i0 < p_.n; ++qb, i0 += Br_) {
            const OnlineSoftmax state = run_block(in, i0, qb, last_tile, h, b);
            const Matrix O_i = compute_dtype(dtype_) == Dtype::f32 ? finish_rows<float>(state, p_.empty_rows, empty_rows, i0, dtype_)
                                                                   : finish_rows<double>(state, p_.empty_rows, empty_rows, i0, dtype_);
            for (std::size_t i = 0; i < O_i.rows(); ++i)
                for (std::size_t c = 0; c < p_.d_v; ++c) out(i0 + i, c) = O_i(i, c);
        }
        return out;
    }

    Note skipped_tile_note(std::size_t qb, std::size_t kt, int h, std::size_t b, std::size_t i0, std::size_t rows, std::size_t j0,
                           std::size_t cols) const {
        Note note{NoteKind::tile_skipped,
                  {{"qb", static_cast<double>(qb)}, {"kt", static_cast<double>(kt)}, {"first_query", static_cast<double>(i0)},
                   {"last_query", static_cast<double>(i0 + rows - 1)}, {"first_key", static_cast<double>(j0)}, {"last_key", static_cast<double>(j0 + cols - 1)}},
                  {}};
        if (p_.heads > 1) note.numbers["head"] = h;
        if (p_.batched) note.numbers["batch"] = static_cast<double>(b);
        return note;
    }

    // Query block qb against key tiles 0 … last_tile; in.q holds query qb·Br at row
    // q_row. The block's mask rows only: the whole n × m mask is never built.
    OnlineSoftmax run_block(const HeadInputs& in, std::size_t q_row, std::size_t qb, std::size_t last_tile, int h, std::size_t b) {
        const std::size_t i0 = qb * Br_, rows = std::min(Br_, p_.n - i0);
        const Matrix Q_i = block_of(in.q, q_row, rows, 0, p_.d_k);
        const Matrix mask = head_mask(p_, b, h, {i0, rows});
        OnlineSoftmax state(rows, p_.d_v);
        for (std::size_t r = 0; r < rows; ++r)
            state.reads_a_key[r] = std::any_of(mask.row(r), mask.row(r) + mask.cols(), [](double x) { return x != -std::numeric_limits<double>::infinity(); });
        bool first_tile = true;  // of this query block: m_old = −∞ there
        for (std::size_t kt = 0, j0 = 0; j0 < p_.m && kt <= last_tile; ++kt, j0 += Bc_) {
            const std::size_t cols = std::min(Bc_, p_.m - j0);
            const Matrix M_ij = block_of(mask, 0, rows, j0, cols);
            // A tile that no query of the block may read changes nothing: skip it.
            if (every_score_masked(M_ij)) {
                if (++tiles_skipped_ <= max_skipped_lines)
                    skipped_notes_.push_back(skipped_tile_note(qb, kt, h, b, i0, rows, j0, cols));
                continue;
            }
            ++tiles_computed_;
            const Matrix K_j = block_of(in.k, j0, cols, 0, p_.d_k), V_j = block_of(in.v, j0, cols, 0, p_.d_v);
            // S_ij = s · Q_i K_jᵀ (capped) + M_ij
            Matrix S_ij = scale(backend_->multiply_transposed(Q_i, K_j, dtype_), p_.scale_factor(), dtype_);
            if (p_.softcap) S_ij = soft_cap(S_ij, *p_.softcap, dtype_);
            S_ij = add_elementwise(S_ij, M_ij, dtype_);
            if (compute_dtype(dtype_) == Dtype::f32) absorb_tile<float>(state, S_ij, V_j, *backend_, dtype_);
            else absorb_tile<double>(state, S_ij, V_j, *backend_, dtype_);
            record_tile(state, std::move(S_ij), qb, kt, i0, rows, j0, cols, h, b, first_tile);
            first_tile = false;
        }
        return state;
    }

    void record_tile(const OnlineSoftmax& state, Matrix scores, std::size_t qb, std::size_t kt, std::size_t i0, std::size_t rows, std::size_t j0,
                     std::size_t cols, int h, std::size_t b, bool first_tile) {
        const std::array<int, 2> tile{static_cast<int>(qb), static_cast<int>(kt)};
        const auto queries = slice_labels(query_labels(p_), i0, rows), keys = slice_labels(key_labels(p_), j0, cols);
        const std::string k_name = p_.kv_heads < p_.heads ? fmt::format("K_{}", kv_head_of(p_, h)) : "K";
        const std::string tile_scores = fmt::format("s · Q[{}…{}] {}[{}…{}]ᵀ", i0, i0 + rows - 1, k_name, j0, j0 + cols - 1);
        steps_.record(StepName::masked, fmt::format("{} + M (query block {}, key tile {})", p_.softcap ? fmt::format("c · tanh({} / c)", tile_scores) : tile_scores, qb, kt),
                      std::move(scores), h, b, queries, keys).tile = tile;
        steps_.record(StepName::m, "max(m_old, rowmax(Z_ij))", state.m, h, b, queries).tile = tile;
        // Before a block's first tile m_old = −∞, so the factor is e^(−∞) = 0 (it
        // multiplies ℓ = u = 0): say so rather than print a rule that shows 1.
        steps_.record(StepName::rescale, first_tile ? "exp(m_old − m) = 0 (the block's first tile: m_old = −∞, nothing to rescale; 1 where m is still −∞)"
                                            : "exp(m_old − m) (1 where the max did not change, or the row has read no key yet)",
                      state.rescale, h, b, queries).tile = tile;
        steps_.record(StepName::l, "α ℓ_old + rowsum(exp(Z_ij − m))", state.l, h, b, queries).tile = tile;
        steps_.record(StepName::u, "α u_old + exp(Z_ij − m) V_j", state.u, h, b, queries).tile = tile;
    }

    std::size_t Br_, Bc_;  // block sizes, at most n and m
    std::size_t tiles_computed_ = 0, tiles_skipped_ = 0;
    // One note per skipped tile, up to a screenful; the count covers the rest.
    static constexpr std::size_t max_skipped_lines = 32;
    std::vector<Note> skipped_notes_;
};

}  // namespace

void validate_tiles(const TiledOptions& tiled) {
    if (tiled.block_q < 1) throw InputError(fmt::format("⟦block_q⟧ {}: a query block holds at least 1 row", tiled.block_q));
    if (tiled.block_k < 1) throw InputError(fmt::format("⟦block_k⟧ {}: a key tile holds at least 1 key", tiled.block_k));
}

Trace pipeline_tiled(const Problem& problem, const RunOptions& options, const TiledOptions& tiled) {
    refuse_train_dropout(problem, "tiled");
    return TiledPipeline(problem, options, tiled).run();
}

Trace pipeline_tiled_block(const Problem& problem, const RunOptions& options, const TiledOptions& tiled, std::size_t batch, std::size_t qb,
                           std::size_t last_tile) {
    refuse_train_dropout(problem, "tiled");
    return TiledPipeline(problem, options, tiled).run_block_of(batch, qb, last_tile);
}

}  // namespace attn_trace
