#pragma once
// cost's reports (docs/COMMANDS.md#cost): the calculator's answers (cost.hpp, core) as
// text for people, every figure with its formula, and as JSON objects for scripts.
#include <string>

#include "attn_trace/cost.hpp"

namespace attn_trace {

std::string cost_text(const CostAnswer& answer);
std::string cost_json(const CostAnswer& answer);
std::string sparse_cost_text(const SparseCost& cost);
std::string sparse_cost_json(const SparseCost& cost);
std::string cache_comparison_text(const CacheComparison& comparison);
std::string cache_comparison_json(const CacheComparison& comparison);

std::string model_cost_text(const ModelCost& cost, const std::string& dir);
std::string model_cost_json(const ModelCost& cost, const std::string& dir);

}  // namespace attn_trace
