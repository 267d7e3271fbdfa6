#pragma once
// `cost` as a function (docs/COMMANDS.md#cost): what a layer costs, from its sizes or from
// a model directory. Numbers are given as the user gave them (signed, so that -1 gets a
// clear message): the command checks them.
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "attn_trace/cost.hpp"
#include "attn_trace/cost_report.hpp"
#include "attn_trace/format_table.hpp"

namespace attn_trace {

struct CostRequest {
    std::vector<long long> n;  // one length, or several with `sparse`
    std::optional<long long> d_model, heads, kv_heads, layers, tokens;  // unset: the defaults of docs/COMMANDS.md#cost
    std::optional<double> bytes;
    std::string sparse;  // a sparse pattern's JSON: count the pairs it scores
    std::string mla;     // "D_C[,D_R]": the cache per token of MHA, GQA, MQA and MLA
    std::string model;   // a model directory: its cache layer by layer
};

struct ModelCostAnswer {
    ModelCost cost;
    std::string directory;
};

using CostResult = std::variant<CostAnswer, SparseCost, CacheComparison, ModelCostAnswer>;

CostResult cost_command(const CostRequest& request);

// The result as `cost --format` prints it (text or json).
std::string render_cost(const CostResult& result, Format format);

}  // namespace attn_trace
