#pragma once
// cost's reports (docs/COMMANDS.md#cost): the calculator's answers (cost.hpp, core) as
// text for people, every figure with its formula, and as JSON objects for scripts.
#include <string>

#include "attn_trace/cost.hpp"
#include "attn_trace/problem.hpp"

namespace attn_trace {

std::string cost_text(const CostAnswer& answer);
std::string cost_json(const CostAnswer& answer);
std::string sparse_cost_text(const SparseCost& cost);
std::string sparse_cost_json(const SparseCost& cost);
std::string cache_comparison_text(const CacheComparison& comparison);
std::string cache_comparison_json(const CacheComparison& comparison);

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
std::string model_cost_text(const ModelCost& cost, const std::string& dir);
std::string model_cost_json(const ModelCost& cost, const std::string& dir);

}  // namespace attn_trace
