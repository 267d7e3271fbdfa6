#include "attn_trace/cost.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"

namespace attn_trace {

namespace {

// a · b, refusing sizes whose counts do not fit in 64 bits.
std::uint64_t times(std::uint64_t a, std::uint64_t b) {
    std::uint64_t product = 0;
    if (__builtin_mul_overflow(a, b, &product))
        throw InputError("cost: the sizes are too large: a count would not fit in 64 bits");
    return product;
}

std::uint64_t plus(std::uint64_t a, std::uint64_t b) {
    std::uint64_t sum = 0;
    if (__builtin_add_overflow(a, b, &sum)) throw InputError("cost: the sizes are too large: a count would not fit in 64 bits");
    return sum;
}

void require_positive(const char* option, std::uint64_t value) {
    if (value == 0) throw InputError(fmt::format("{} 0: expected a whole number of at least 1", option));
}

}  // namespace

void require_bytes_per_number(double bytes) {
    // 64 bytes is far past any number format; the bound keeps every byte count finite.
    if (!(bytes > 0 && bytes <= 64))
        throw InputError(fmt::format("⟦bytes⟧ {}: expected the bytes per number, greater than 0 and at most 64 (4 for float32, 2 for fp16)", bytes));
}

CostAnswer compute_cost(const CostQuestion& asked) {
    CostAnswer a;
    a.question = asked;
    CostQuestion& q = a.question;
    if (q.kv_heads == 0) q.kv_heads = q.heads;
    if (q.tokens == 0) q.tokens = q.n;
    require_positive("⟦n⟧", q.n);
    require_positive("⟦d_model⟧", q.d_model);
    require_positive("⟦heads⟧", q.heads);
    require_positive("⟦layers⟧", q.layers);
    require_bytes_per_number(q.bytes);
    if (q.d_model % q.heads != 0)
        throw InputError(fmt::format("⟦heads⟧ {} must divide ⟦d_model⟧ {} (each head takes d_model / heads columns)", q.heads, q.d_model));
    if (q.heads % q.kv_heads != 0)
        throw InputError(fmt::format("⟦kv_heads⟧ {} must divide ⟦heads⟧ {} (each KV head serves the same number of query heads)", q.kv_heads, q.heads));

    const std::uint64_t n = q.n, d = q.d_model;
    a.d_head = d / q.heads;
    a.kv_width = q.kv_heads * a.d_head;
    // Q and W_O: N·d·d each; K and V: N·d·(H_kv·d_k) each.
    a.projection_multiply_adds = times(times(2, n), plus(times(d, d), times(d, a.kv_width)));
    // Q Kᵀ and A V: H heads × N·N·d_k each = N²·d.
    a.attention_multiply_adds = times(times(2, times(n, n)), d);
    a.total_multiply_adds = plus(a.projection_multiply_adds, a.attention_multiply_adds);

    a.scores_per_head = times(n, n);
    a.scores_per_layer = times(q.heads, a.scores_per_head);
    a.score_bytes_per_head = static_cast<double>(a.scores_per_head) * q.bytes;
    a.score_bytes_per_layer = static_cast<double>(a.scores_per_layer) * q.bytes;

    a.kv_cache_numbers_per_token = times(times(2, q.layers), a.kv_width);
    a.kv_cache_bytes_per_token = static_cast<double>(a.kv_cache_numbers_per_token) * q.bytes;
    a.kv_cache_bytes_total = a.kv_cache_bytes_per_token * static_cast<double>(q.tokens);
    a.kv_cache_bytes_per_token_without_sharing = static_cast<double>(times(times(2, q.layers), d)) * q.bytes;

    // W_Q (d × d) + b_Q (d), W_K and W_V (d × H_kv·d_k) + biases, W_O (d × d) + b_O (d).
    a.parameters_without_biases = plus(times(2, times(d, d)), times(2, times(d, a.kv_width)));
    a.parameters_with_biases = plus(a.parameters_without_biases, plus(times(2, d), times(2, a.kv_width)));
    // 2·N²·d > N·(2d² + 2d·H_kv·d_k)  ⇔  N > d + H_kv·d_k
    a.crossover_length = d + a.kv_width;
    return a;
}

SparseCost compute_sparse_cost(const CostQuestion& question, const SparsePattern& pattern, const std::vector<std::uint64_t>& lengths) {
    SparseCost cost;
    for (std::uint64_t n : lengths) {
        CostQuestion at = question;
        at.n = n;
        const CostAnswer dense = compute_cost(at);  // checks the sizes
        cost.question = dense.question;
        SparsePattern drawn = pattern;
        const std::size_t blocks = block_count(n, pattern.block);
        for (std::size_t g : pattern.global)
            if (g >= blocks)
                throw InputError(fmt::format("⟦sparse⟧: global block {} is past the last block ({}) at n = {} in blocks of {}", g, blocks - 1, n, pattern.block));
        if (pattern.has_random && static_cast<double>(blocks) * static_cast<double>(blocks) > static_cast<double>(1 << 28))
            throw InputError(fmt::format("⟦sparse⟧: drawing random blocks at n = {} looks at {} × {} block pairs: use a larger block", n, blocks, blocks));
        resolve_random(drawn, n, n);
        SparseCostRow row;
        row.n = n;
        row.scored_pairs = sparse_scored_pairs(drawn, n, n);
        if (row.scored_pairs == 0)  // nothing to compare with dense: every ratio would be 0 or 0/0
            throw InputError(fmt::format("⟦sparse⟧: the pattern scores no pair at n = {}: give it a window, global or random blocks", n));
        row.dense_pairs = times(n, n);
        row.density = static_cast<double>(row.scored_pairs) / static_cast<double>(row.dense_pairs);
        row.attention_multiply_adds = times(times(2, row.scored_pairs), at.d_model);
        row.dense_attention_multiply_adds = dense.attention_multiply_adds;
        row.score_bytes_per_head = static_cast<double>(row.scored_pairs) * at.bytes;
        row.dense_score_bytes_per_head = dense.score_bytes_per_head;
        cost.rows.push_back(row);
    }
    cost.pattern = describe_sparse(pattern);
    return cost;
}

std::uint64_t mla_cache_elements_per_token(std::uint64_t d_c, std::uint64_t d_r, std::uint64_t layers) { return times(plus(d_c, d_r), layers); }

CacheComparison compare_kv_caches(const CostQuestion& question, std::uint64_t d_c, std::uint64_t d_r) {
    require_positive("⟦mla⟧ d_c", d_c);
    const CostAnswer dense = compute_cost(question);
    CacheComparison c;
    c.question = dense.question;
    c.d_head = dense.d_head;
    c.d_c = d_c;
    c.d_r = d_r;
    c.mha = times(times(2, c.question.heads), c.d_head);
    c.gqa = times(times(2, c.question.kv_heads), c.d_head);
    c.mqa = times(2, c.d_head);
    c.mla = mla_cache_elements_per_token(d_c, d_r, 1);
    return c;
}

ModelCost compute_model_cost(const ModelCacheFacts& facts, std::uint64_t n, std::uint64_t tokens) {
    require_bytes_per_number(facts.bytes_per_number);
    ModelCost cost{facts, n, tokens, {}, 0, 0, 0, 0};
    for (const auto& layer : facts.layers) {
        const std::uint64_t held = layer.window ? std::min(tokens, *layer.window) : tokens;
        cost.held.push_back(held);
        cost.kv_cache_numbers_per_token += layer.kv_numbers_per_token;
        cost.attention_parameters += layer.attention_parameters;
        cost.kv_cache_bytes_total += static_cast<double>(layer.kv_numbers_per_token) * facts.bytes_per_number * static_cast<double>(held);
    }
    cost.kv_cache_bytes_per_token = static_cast<double>(cost.kv_cache_numbers_per_token) * facts.bytes_per_number;
    return cost;
}

}  // namespace attn_trace
