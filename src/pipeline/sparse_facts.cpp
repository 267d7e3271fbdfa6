#include "sparse_facts.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace attn_trace {

bool has_sparse_pattern(const Problem& p) {
    return std::any_of(p.masks.begin(), p.masks.end(), [](const MaskSpec& spec) { return spec.kind == MaskSpec::Kind::sparse; });
}

PatternFacts pattern_facts(const Problem& p) {
    PatternFacts facts;
    // The pattern is the masks' alone: lengths belong to one sequence, biases score a pair rather than drop it.
    const Matrix mask = build_mask(p.masks, p.n, p.m, p.m, 0.0);
    std::vector<std::vector<std::size_t>> reads(p.n);  // the keys each query scores
    for (std::size_t i = 0; i < p.n; ++i)
        for (std::size_t j = 0; j < p.m; ++j)
            if (std::isfinite(mask(i, j))) reads[i].push_back(j);
    for (const auto& row : reads) facts.scored_pairs += row.size();
    facts.density = static_cast<double>(facts.scored_pairs) / (static_cast<double>(p.n) * static_cast<double>(p.m));
    if (p.n != p.m || p.cross_attention()) return facts;
    // Layer L's query i holds what its reads held after layer L − 1: a breadth-first
    // search from i over "reads", each hop one layer.
    Matrix reach(p.n, p.n, std::numeric_limits<double>::infinity());
    std::vector<std::size_t> frontier, next;
    for (std::size_t i = 0; i < p.n; ++i) {
        reach(i, i) = 1;
        frontier.assign(1, i);
        for (double layers = 1; !frontier.empty(); ++layers) {
            next.clear();
            for (std::size_t u : frontier)
                for (std::size_t j : reads[u])
                    if (std::isinf(reach(i, j))) {
                        reach(i, j) = layers;
                        next.push_back(j);
                    }
            frontier.swap(next);
        }
    }
    for (double x : reach.data())
        if (std::isfinite(x)) facts.reach_max = std::max(facts.reach_max, x);
    facts.reach = std::move(reach);
    return facts;
}

}  // namespace attn_trace
