#pragma once
// The cost calculator (docs/COMMANDS.md#cost): FLOPs, score memory, KV-cache bytes and
// parameter counts of one multi-head (or grouped-query) attention layer.
// Counting convention: one multiply-add (a·b + c) counts 1; FLOPs that count the
// multiply and the add separately are twice as many. Softmax and masking are left out.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attn_trace/sparse_pattern.hpp"

namespace attn_trace {

struct CostQuestion {
    std::uint64_t n = 0;         // tokens in the sequence
    std::uint64_t d_model = 0;   // d: width of a token vector
    std::uint64_t heads = 1;     // H; d_k = d_v = d / H
    std::uint64_t kv_heads = 0;  // H_kv; 0 = H (multi-head), 1 = multi-query
    std::uint64_t layers = 1;
    double bytes = 4;            // bytes per number (4 float32, 2 fp16/bf16)
    std::uint64_t tokens = 0;    // cache length for the KV-cache total; 0 = n
};

// Refuses (InputError) a bytes-per-number that is not in (0, 64].
void require_bytes_per_number(double bytes);

struct CostAnswer {
    CostQuestion question;       // with kv_heads and tokens filled in
    std::uint64_t d_head = 0;    // d_k = d / H
    std::uint64_t kv_width = 0;  // H_kv · d_k: the columns of K (and of V)
    // Multiply-adds per layer: Q and W_O take N·d², K and V take N·d·H_kv·d_k each
    // (4·N·d² for MHA); Q Kᵀ and A V take H·N²·d_k = N²·d each (2·N²·d).
    std::uint64_t projection_multiply_adds = 0, attention_multiply_adds = 0, total_multiply_adds = 0;
    // The score matrix: N² numbers per head, H·N² per layer.
    std::uint64_t scores_per_head = 0, scores_per_layer = 0;
    double score_bytes_per_head = 0, score_bytes_per_layer = 0;
    // KV cache: 2 · layers · H_kv · d_k numbers per token.
    std::uint64_t kv_cache_numbers_per_token = 0;
    double kv_cache_bytes_per_token = 0, kv_cache_bytes_total = 0;
    double kv_cache_bytes_per_token_without_sharing = 0;  // with H KV heads (equal to the above for MHA)
    // Per layer: W_Q, W_O (d × d) and W_K, W_V (d × H_kv·d_k), with their biases.
    std::uint64_t parameters_with_biases = 0, parameters_without_biases = 0;
    // The N² term passes the projection term when 2·N²·d > N·(2d² + 2d·H_kv·d_k),
    // that is N > d + H_kv·d_k (= 2d for MHA).
    std::uint64_t crossover_length = 0;
};

// Throws InputError for zero sizes, heads not dividing d_model, kv_heads not
// dividing heads, and sizes whose counts would overflow 64 bits.
CostAnswer compute_cost(const CostQuestion& question);

// The attention term of a sparse pattern, which scores only some pairs (self-attention,
// n = m), beside the dense one, at each length in `lengths` (docs/FAMILY.md#tiles-and-cost).
struct SparseCostRow {
    std::uint64_t n = 0, scored_pairs = 0, dense_pairs = 0;
    double density = 0;
    // Q Kᵀ and A V over the scored pairs: H · scored · d_k each = 2 · scored · d.
    std::uint64_t attention_multiply_adds = 0, dense_attention_multiply_adds = 0;
    double score_bytes_per_head = 0, dense_score_bytes_per_head = 0;
};
struct SparseCost {
    CostQuestion question;
    std::string pattern;  // describe_sparse
    std::vector<SparseCostRow> rows;
};
// The pattern's random blocks are drawn again for each length. Throws InputError
// as compute_cost does, and for a global block past the last block of a length.
SparseCost compute_sparse_cost(const CostQuestion& question, const SparsePattern& pattern, const std::vector<std::uint64_t>& lengths);

// The KV cache per token of one layer under MHA (2·H·d_h), GQA (2·H_kv·d_h), MQA
// (2·d_h) and MLA (d_c + d_r: the latent and the shared RoPE key)
// (docs/FAMILY.md#mla-multi-head-latent-attention-deepseek-v2).
struct CacheComparison {
    CostQuestion question;  // kv_heads filled in
    std::uint64_t d_head = 0, d_c = 0, d_r = 0;
    std::uint64_t mha = 0, gqa = 0, mqa = 0, mla = 0;  // elements per token per layer
};
CacheComparison compare_kv_caches(const CostQuestion& question, std::uint64_t d_c, std::uint64_t d_r);
// What MLA caches per token: (d_c + d_r) · layers elements, one latent and one RoPE key for every head.
std::uint64_t mla_cache_elements_per_token(std::uint64_t d_c, std::uint64_t d_r, std::uint64_t layers);

// One layer of a model directory as `cost --model` counts it (docs/COMMANDS.md#cost-of-a-model-directory).
struct ModelLayerCache {
    std::string layer_type;                  // full_attention or sliding_attention
    std::optional<std::uint64_t> window;     // a sliding layer's W: it caches min(n, W) tokens
    std::uint64_t kv_numbers_per_token = 0;  // 2 · H_kv · d_head (MLA: d_c + d_r)
    std::uint64_t attention_parameters = 0;  // elements of the tensors the family reads, norms included
};
struct ModelCacheFacts {
    std::string model_type;
    double bytes_per_number = 4;  // the checkpoint's dtype
    std::vector<ModelLayerCache> layers;
};
// A model directory's KV cache (docs/COMMANDS.md#cost-of-a-model-directory): each layer
// holds its numbers per token for min(tokens, W) tokens (W its window, if it slides).
struct ModelCost {
    ModelCacheFacts facts;
    std::uint64_t n = 0, tokens = 0;
    std::vector<std::uint64_t> held;  // tokens each layer holds
    std::uint64_t kv_cache_numbers_per_token = 0, attention_parameters = 0;
    double kv_cache_bytes_per_token = 0, kv_cache_bytes_total = 0;
};
ModelCost compute_model_cost(const ModelCacheFacts& facts, std::uint64_t n, std::uint64_t tokens);

}  // namespace attn_trace
