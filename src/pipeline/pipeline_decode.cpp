// KV-cache decoding (docs/COMMANDS.md#decode): the queries one at a time (after an optional
// prefill block), each scored against a cache that holds only the past.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attn_trace/cost.hpp"
#include "attn_trace/errors.hpp"
#include "pipeline_base.hpp"

namespace attn_trace {

namespace {

constexpr double minus_infinity = -std::numeric_limits<double>::infinity();

class DecodePipeline : PipelineBase {
public:
    DecodePipeline(const Problem& problem, const RunOptions& options, const DecodeOptions& decode)
        : PipelineBase(problem, options, "decode"), decode_(decode), offset_(problem.m - std::min(problem.m, problem.n)) {}

    Trace run() {
        validate();
        trace_.notes = problem_notes(p_, dtype_);
        add_decode_notes();
        for (std::size_t b = 0; b < p_.batch; ++b) run_sequence(b);
        // Before the comparison computes the full trace, so that decode's own overflow is the one reported.
        check_overflow(trace_, p_, dtype_);
        trace_.numbers.emplace_back("max_abs_diff_vs_full", max_abs_diff_vs(trace_, pipeline_full(causal_reference(), options_)));
        add_cache_size();
        return std::move(trace_);
    }

    // Only the decode step that ends at query t (explain): its steps, no notes or numbers.
    Trace run_step_of(std::size_t b, std::size_t t) {
        validate();
        Heads heads = prepare_heads(b);
        const std::size_t first = decode_.prefill > 0 && t + 1 == decode_.prefill ? 0 : t;
        // The keys cached before this step keep the angles of the steps that appended them.
        for (std::size_t before = 0, end = 0; dynamic_ && before < first; before = end) {
            end = before == 0 && decode_.prefill > 0 ? decode_.prefill : before + 1;
            turn_new_rows(heads, before, end);
        }
        run_step(first, t + 1, b, heads);
        return finish();
    }

private:
    void validate() const {
        if (p_.cross_attention())
            throw InputError(fmt::format("{}: decode needs self-attention: with X_source the keys and values come from another "
                                         "sequence that every step reads whole, not a cache that grows step by step (use run)",
                                         p_.file));
        // MLA's decoupled RoPE key is turned once for every head; decode turns it with the
        // whole sequence's angles, which under dynamic scaling are not the ones a cache holds.
        if (p_.mla && p_.mla->d_r > 0 && p_.mla->rope.scaling.type == RopeScaling::Type::dynamic)
            throw InputError(fmt::format("{}: decode does not trace MLA's RoPE key under dynamic scaling (its angles change as the cache grows); "
                                         "run traces the whole sequence",
                                         p_.file));
        if (p_.m < p_.n)
            throw InputError(fmt::format("{}: decode needs at least as many keys as queries (query t reads the keys up to its own), "
                                         "found n = {} queries and m = {} keys",
                                         p_.file, p_.n, p_.m));
        if (decode_.prefill > p_.n)
            throw InputError(fmt::format("⟦prefill⟧ {}: {} has n = {} queries, so the prefill block takes 0 to {} of them", decode_.prefill,
                                         p_.file, p_.n, p_.n));
        // An encoder's layer (BERT's) lets every query read every key, later ones too: a cache
        // of the past cannot hold that, and decode would trace another attention.
        const auto model_causal = [](const MaskSpec& mask) {
            return mask.origin == MaskOrigin::model && (mask.kind == MaskSpec::Kind::causal_bottom_right || mask.kind == MaskSpec::Kind::causal_upper_left);
        };
        if (p_.model_cache && std::none_of(p_.masks.begin(), p_.masks.end(), model_causal))
            throw InputError(fmt::format("{}: a {} layer lets every query read every key, later ones too, which a cache of the past cannot hold: "
                                         "decode traces decoders; run traces this layer",
                                         p_.file, p_.model_cache->model_type));
        if (decode_.layers && *decode_.layers < 1) throw InputError(fmt::format("⟦layers⟧ {}: expected a whole number of layers, at least 1", *decode_.layers));
        if (decode_.bytes && !(*decode_.bytes > 0 && std::isfinite(*decode_.bytes)))
            throw InputError(fmt::format("⟦bytes⟧ {}: expected the bytes per cached number, greater than 0 (2 for fp16, 4 for f32)", *decode_.bytes));
    }

    // The full computation decode must equal: the problem's masks and the causal
    // mask aligned to the end of the keys (the cache never holds a later key).
    Problem causal_reference() const {
        Problem reference = p_;
        reference.masks.push_back(parse_mask_string("causal-bottom-right", "decode"));
        return reference;
    }

    // The width W of the problem's sliding window (window:W, no keys after the query's own;
    // the narrowest of several), which bounds the cache: no query reads further back.
    static std::optional<std::size_t> rolling_window(const Problem& p) {
        std::optional<std::size_t> window;
        for (const auto& spec : p.masks)
            if (spec.kind == MaskSpec::Kind::window && spec.window_right == 0 && spec.window_left >= 0) {
                const auto width = static_cast<std::size_t>(spec.window_left) + 1;
                window = window ? std::min(*window, width) : width;
            }
        return window;
    }

    void add_decode_notes() {
        auto& notes = trace_.notes;
        notes.push_back({NoteKind::decode, {{"prefill", static_cast<double>(decode_.prefill)}}, {}});
        if (window_) notes.push_back({NoteKind::rolling_cache, {{"window", static_cast<double>(*window_)}}, {}});
        if (p_.mla) notes.back().numbers["mla"] = 1;
        if (decode_.prefill) notes.push_back({NoteKind::prefill, {{"prefill", static_cast<double>(decode_.prefill)}}, {}});
        if (offset_ > 0)
            notes.push_back({NoteKind::cache_offset, {{"m", static_cast<double>(p_.m)}, {"n", static_cast<double>(p_.n)}, {"offset", static_cast<double>(offset_)}}, {}});
        Note reference{NoteKind::decode_reference, {}, {}};
        if (!p_.masks.empty() || !p_.lengths.empty()) reference.words["mask"] = trace_.problem.mask;
        notes.push_back(std::move(reference));
        if (p_.kv_heads < p_.heads) notes.push_back({NoteKind::cache_heads, {{"kv_heads", p_.kv_heads}, {"heads", p_.heads}}, {}});
        if (dynamic_) notes.push_back({NoteKind::dynamic_rope_decode, {{"original", p_.rope->scaling.original_max_positions}}, {}});
    }

    // Every head's q, k, v of sequence b, with an (n, d_v) output and a list of
    // empty rows each: what the decode steps fill in.
    struct Heads {
        std::optional<MlaParts> mla;  // MLA caches c_kv and k_rope, one for all heads
        std::vector<HeadInputs> inputs;
        std::vector<Matrix> outs;
        std::vector<std::vector<std::size_t>> empty_rows;
        std::vector<HeadInputs> unturned;  // dynamic NTK: each head's q and k before RoPE, turned step by step
    };
    Heads prepare_heads(std::size_t b) const {
        Heads heads;
        if (p_.mla) heads.mla = mla_parts(p_, b, *backend_, dtype_, {0, p_.n});
        const Projections projections = heads.mla ? mla_projections(p_, *heads.mla) : project(p_, b, *backend_, dtype_);
        for (int h = 0; h < p_.heads; ++h) {
            heads.inputs.push_back(head_inputs(p_, projections, h, dtype_));
            heads.outs.emplace_back(p_.n, p_.d_v);
            if (dynamic_) {
                const std::size_t hs = static_cast<std::size_t>(h), g = static_cast<std::size_t>(kv_head_of(p_, h));
                heads.unturned.push_back({projections.q.columns(hs * p_.d_k, p_.d_k), projections.k.columns(g * p_.d_k, p_.d_k), Matrix()});
            }
        }
        heads.empty_rows.resize(static_cast<std::size_t>(p_.heads));
        return heads;
    }

    void run_sequence(std::size_t b) {
        Heads heads = prepare_heads(b);
        // The prefill block (queries 0 … P−1) first, then one query per step.
        for (std::size_t first = 0, end = 0; first < p_.n; first = end) {
            end = first == 0 && decode_.prefill > 0 ? decode_.prefill : first + 1;
            run_step(first, end, b, heads);
        }
        for (int h = 0; h < p_.heads; ++h) {
            const std::size_t hs = static_cast<std::size_t>(h);
            steps_.note_empty_rows(heads.empty_rows[hs], h, b);
            steps_.record(StepName::out, "the rows A V_cache of every step, stacked", heads.outs[hs], h, b, query_labels(p_));
        }
        steps_.record_concat_and_final(heads.outs, b, *backend_, dtype_);
    }

    // Queries first … end−1 as one step: the cache then holds keys 0 … end−1+(m−n).
    // heads.inputs[h]: q (n, d_k), k (m, d_k), v (m, d_v); heads.outs[h] (n, d_v)
    // receives the rows. The mask rows are built per step, so no step ever holds
    // the whole n × m mask.
    // Dynamic NTK as transformers' decode does it (docs/PROBLEM.md#rope-scaling-partial-rotary):
    // the step's queries first … end−1 and the keys it appends turn with the angles of
    // the length read so far, L = their largest position + 1 (the plain angles while
    // L ≤ the original context); the keys already cached keep the angles they were
    // appended with, which is why decode then differs from the full pass.
    void turn_new_rows(Heads& heads, std::size_t first, std::size_t end) const {
        const std::size_t new_keys = first == 0 ? 0 : first + offset_, cache_length = end + offset_;
        const std::vector<double> q_at(query_positions_.begin() + static_cast<long>(first), query_positions_.begin() + static_cast<long>(end));
        const std::vector<double> k_at(key_positions_.begin() + static_cast<long>(new_keys), key_positions_.begin() + static_cast<long>(cache_length));
        double length = 0;
        for (double position : q_at) length = std::max(length, position + 1);
        for (double position : k_at) length = std::max(length, position + 1);
        Rope rope = *p_.rope;
        resolve_rope(rope, rope.rotary_dims, length, p_.file + ": $.rope.scaling");
        for (std::size_t h = 0; h < heads.inputs.size(); ++h) {
            const Matrix q = apply_rope(block_of(heads.unturned[h].q, first, end - first, 0, p_.d_k), rope, q_at, dtype_);
            const Matrix k = apply_rope(block_of(heads.unturned[h].k, new_keys, cache_length - new_keys, 0, p_.d_k), rope, k_at, dtype_);
            for (std::size_t r = 0; r < q.rows(); ++r) std::copy(q.row(r), q.row(r) + p_.d_k, heads.inputs[h].q.row(first + r));
            for (std::size_t r = 0; r < k.rows(); ++r) std::copy(k.row(r), k.row(r) + p_.d_k, heads.inputs[h].k.row(new_keys + r));
        }
    }

    void run_step(std::size_t first, std::size_t end, std::size_t b, Heads& heads) {
        if (dynamic_) turn_new_rows(heads, first, end);
        const std::size_t rows = end - first, cache_length = end + offset_;
        const int t = static_cast<int>(end - 1);
        const int group = p_.heads / p_.kv_heads;
        const auto query_names = slice_labels(query_labels(p_), first, rows);
        // A rolling cache holds keys kept … cache_length − 1 after this step, and dropped
        // evicted_from … kept − 1 now; a one-query step reads only what it keeps (the
        // window blocks the rest), a prefill block reads all its keys first.
        const std::size_t kept = window_ && cache_length > *window_ ? cache_length - *window_ : 0;
        const std::size_t evicted_from = std::min(kept, cache_start_);
        const std::size_t read_from = rows == 1 ? kept : cache_start_;
        cache_start_ = kept;
        const auto key_names = slice_labels(key_labels(p_), read_from, cache_length - read_from);
        const auto kept_names = slice_labels(key_labels(p_), kept, cache_length - kept);
        std::optional<std::vector<std::size_t>> evicted;
        std::string dropped;  // ", evicted 3" in the heading
        if (window_) {
            evicted.emplace();
            for (std::size_t j = evicted_from; j < kept; ++j) evicted->push_back(j);
            if (!evicted->empty()) dropped = fmt::format(", evicted {}", fmt::join(*evicted, ", "));
        }
        if (heads.mla) {
            // One latent and one RoPE key per token for every head: each head's keys and values are c_cache W_UK,h and c_cache W_UV,h.
            Step& c = steps_.record(StepName::c_cache, fmt::format("C_KV[{}…{}]{}", kept, cache_length - 1, dropped),
                                    block_of(heads.mla->c_kv, kept, cache_length - kept, 0, p_.mla->d_c), std::nullopt, b, kept_names);
            c.t = t;
            c.evicted = evicted;
            if (p_.mla->d_r)
                steps_.record(StepName::kr_cache, fmt::format("K_R[{}…{}]", kept, cache_length - 1), block_of(heads.mla->k_rope, kept, cache_length - kept, 0, p_.mla->d_r),
                              std::nullopt, b, kept_names).t = t;
        }
        for (int g = 0; g < p_.kv_heads && !heads.mla; ++g) {
            const HeadInputs& kv = heads.inputs[static_cast<std::size_t>(g * group)];
            const std::string which = p_.kv_heads > 1 || p_.heads > 1 ? fmt::format(" of KV head {}", g) : "";
            Step& k = steps_.record(StepName::k_cache, fmt::format("K[{}…{}]{}{}", kept, cache_length - 1, which, dropped), block_of(kv.k, kept, cache_length - kept, 0, p_.d_k), g, b,
                                    kept_names);
            k.t = t;
            k.evicted = evicted;
            Step& v = steps_.record(StepName::v_cache, fmt::format("V[{}…{}]{}{}", kept, cache_length - 1, which, dropped), block_of(kv.v, kept, cache_length - kept, 0, p_.d_v), g, b,
                                    kept_names);
            v.t = t;
            v.evicted = evicted;
        }
        for (int h = 0; h < p_.heads; ++h) {
            const std::size_t hs = static_cast<std::size_t>(h);
            const HeadInputs& in = heads.inputs[hs];
            const std::size_t held = cache_length - read_from;
            const Matrix k_cache = block_of(in.k, read_from, held, 0, p_.d_k), v_cache = block_of(in.v, read_from, held, 0, p_.d_v);
            // Z = s · Q[t] K_cacheᵀ (+ softcap) + M[t, 0…cache)
            Matrix z = scale(backend_->multiply_transposed(block_of(in.q, first, rows, 0, p_.d_k), k_cache, dtype_), p_.scale_factor(), dtype_);
            if (p_.softcap) z = soft_cap(z, *p_.softcap, dtype_);
            const Matrix mask = cache_mask(head_mask(p_, b, h, {first, rows}), first, read_from, cache_length);
            z = add_elementwise(z, mask, dtype_);
            SoftmaxSteps softmax = softmax_rows(z, p_.empty_rows, dtype_, true, &mask);
            for (std::size_t r : softmax.empty_rows) heads.empty_rows[hs].push_back(first + r);
            if (p_.empty_rows == EmptyRows::error) steps_.note_empty_rows(heads.empty_rows[hs], h, b);
            // o_t = a_t V_cache
            Matrix out = backend_->multiply(softmax.weights, v_cache, dtype_);
            for (std::size_t r = 0; r < rows; ++r)
                for (std::size_t j = 0; j < p_.d_v; ++j) heads.outs[hs](first + r, j) = out(r, j);
            // Index ranges are written X[a…b] everywhere (docs/NOTATION.md); Z is run's `masked`.
            const std::string q_rows = rows == 1 ? fmt::format("Q[{}]", first) : fmt::format("Q[{}…{}]", first, first + rows - 1);
            const std::string scores = fmt::format("s · {} K_cacheᵀ", q_rows);
            steps_.record(StepName::masked, fmt::format("{}{}", p_.softcap ? fmt::format("c · tanh({} / c)", scores) : scores, rows > 1 ? " + causal M" : " + M"),
                          std::move(z), h, b, query_names, key_names).t = t;
            steps_.record(StepName::weights, "softmax(Z)", std::move(softmax.weights), h, b, query_names, key_names).t = t;
            steps_.record(StepName::out, "A V_cache", std::move(out), h, b, query_names).t = t;
        }
    }

    // M's rows first … (rows, m) -> over the cached keys (rows, cache_length),
    // with the keys after each query blocked: only the prefill block has any.
    Matrix cache_mask(const Matrix& mask_rows, std::size_t first, std::size_t read_from, std::size_t cache_length) const {
        Matrix block = block_of(mask_rows, 0, mask_rows.rows(), read_from, cache_length - read_from);
        for (std::size_t r = 0; r < block.rows(); ++r)
            for (std::size_t j = first + r + offset_ + 1; j < cache_length; ++j) block(r, j - read_from) = minus_infinity;
        return block;
    }

    // Cache size per token: layers · H_kv · (d_k + d_v) · bytes (= 2 · layers · H_kv · d_k · bytes
    // when d_v = d_k). A model directory's problem, unless ⟦layers⟧ is given, counts the whole
    // model as `cost --model` does: every layer with its own window, the checkpoint's bytes.
    void add_cache_size() {
        const std::optional<ModelCacheFacts>& model = decode_.layers ? std::nullopt : p_.model_cache;
        const int layers = model ? static_cast<int>(model->layers.size()) : decode_.layers.value_or(1);
        // The checkpoint's bytes whether or not ⟦layers⟧ replaces the model's layers.
        const double bytes = decode_.bytes.value_or(p_.model_cache ? p_.model_cache->bytes_per_number : dtype_bytes(dtype_));
        const std::size_t cached = decode_.tokens.value_or(p_.m);
        const double per_kv_head = static_cast<double>(p_.d_k + p_.d_v);
        double elements = p_.mla ? static_cast<double>(mla_cache_elements_per_token(p_.mla->d_c, p_.mla->d_r, static_cast<std::uint64_t>(layers)))
                                 : layers * p_.kv_heads * per_kv_head;
        // A rolling cache never holds more than its window.
        double tokens = static_cast<double>(std::min(cached, window_.value_or(cached))), total = elements * bytes * tokens;
        if (model) {
            ModelCacheFacts facts = *model;
            facts.bytes_per_number = bytes;
            const ModelCost cost = compute_model_cost(facts, cached, cached);
            elements = static_cast<double>(cost.kv_cache_numbers_per_token);
            tokens = static_cast<double>(cached);  // each sliding layer holds at most its window: in the total
            total = cost.kv_cache_bytes_total;
            const auto sliding = std::count_if(facts.layers.begin(), facts.layers.end(), [](const ModelLayerCache& l) { return l.window.has_value(); });
            trace_.notes.push_back({NoteKind::model_cache_size,
                                    {{"layers", layers}, {"bytes", bytes}, {"numbers_per_token", elements}, {"bytes_per_token", elements * bytes},
                                     {"tokens", tokens}, {"bytes_total", total}, {"sliding", static_cast<double>(sliding)}},
                                    {{"model_type", facts.model_type}}});
        }
        auto& numbers = trace_.numbers;
        numbers.emplace_back("kv_cache_layers", layers);
        numbers.emplace_back("kv_cache_bytes_per_number", bytes);
        numbers.emplace_back("kv_cache_elements_per_token", elements);
        numbers.emplace_back("kv_cache_bytes_per_token", elements * bytes);
        numbers.emplace_back("kv_cache_tokens", tokens);
        numbers.emplace_back("kv_cache_bytes_total", total);
        if (p_.mla) {
            // What the same model caching its decompressed keys and values holds (as transformers'
            // cache does): every head's key with its RoPE part, d_content + d_r, and its value.
            // cost --mla keeps the paper's comparison, an MHA model of 2·H·d_h.
            const double without_mla = layers * p_.heads * static_cast<double>(p_.mla->d_content + p_.mla->d_r + p_.d_v) * bytes;
            numbers.emplace_back("kv_cache_bytes_per_token_without_mla", without_mla);
            trace_.notes.push_back({NoteKind::mla_cache_size,
                                    {{"layers", layers}, {"d_c", static_cast<double>(p_.mla->d_c)}, {"d_r", static_cast<double>(p_.mla->d_r)},
                                     {"bytes", bytes}, {"bytes_per_token", elements * bytes}, {"without_mla", without_mla}, {"heads", p_.heads}},
                                    {}});
            return;
        }
        if (!model)
            trace_.notes.push_back({NoteKind::kv_cache_size,
                                    {{"layers", layers}, {"kv_heads", p_.kv_heads}, {"d_k", static_cast<double>(p_.d_k)},
                                     {"d_v", static_cast<double>(p_.d_v)}, {"bytes", bytes}, {"bytes_per_token", elements * bytes}, {"tokens", tokens}},
                                    {}});
        if (p_.kv_heads < p_.heads) {
            const double without_sharing = layers * p_.heads * per_kv_head * bytes;
            numbers.emplace_back("kv_cache_bytes_per_token_without_sharing", without_sharing);
            trace_.notes.push_back({NoteKind::kv_cache_sharing,
                                    {{"kv_heads", p_.kv_heads}, {"heads", p_.heads}, {"bytes_per_token", elements * bytes}, {"without_sharing", without_sharing}},
                                    {}});
        }
    }

    DecodeOptions decode_;
    std::size_t offset_;  // m − n: keys in the cache before the first query
    std::optional<std::size_t> window_ = rolling_window(p_);  // a rolling cache of at most this many keys
    std::size_t cache_start_ = 0;  // the first key the rolling cache still holds
    bool dynamic_ = p_.rope && p_.rope->scaling.type == RopeScaling::Type::dynamic;
    std::vector<double> query_positions_ = query_positions(p_), key_positions_ = key_positions(p_);
};

}  // namespace

Trace pipeline_decode(const Problem& problem, const RunOptions& options, const DecodeOptions& decode) {
    refuse_train_dropout(problem, "decode");
    return DecodePipeline(problem, options, decode).run();
}

Trace pipeline_decode_step(const Problem& problem, const RunOptions& options, const DecodeOptions& decode, std::size_t batch, std::size_t t) {
    refuse_train_dropout(problem, "decode");
    return DecodePipeline(problem, options, decode).run_step_of(batch, t);
}

}  // namespace attn_trace
