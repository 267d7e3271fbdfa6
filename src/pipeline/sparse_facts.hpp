#pragma once
// What a sparse pattern (docs/FAMILY.md#sparse-patterns-which-pairs-are-scored-at-all)
// connects: how many pairs are scored, and through how many stacked layers key j's
// information reaches query i.
#include <cstddef>
#include <optional>

#include "attn_trace/matrix.hpp"
#include "attn_trace/problem.hpp"

namespace attn_trace {

bool has_sparse_pattern(const Problem& problem);

struct PatternFacts {
    std::size_t scored_pairs = 0;  // finite entries of the masks' M (no `lengths`, no biases)
    double density = 0;            // scored_pairs / (n·m)
    // Self-attention only: (n, n), the least L ≥ 1 such that L layers of the pattern
    // carry key j to query i (a token keeps its own through the residual stream),
    // ∞ where no number of layers does; reach_max the largest finite L.
    std::optional<Matrix> reach;
    double reach_max = 0;
};
PatternFacts pattern_facts(const Problem& problem);

}  // namespace attn_trace
