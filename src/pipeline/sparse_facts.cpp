#include "sparse_facts.hpp"

#include <algorithm>
#include <cstdint>
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
    // reads[i]: the keys query i scores, as a bitset of words.
    const std::size_t words = (p.m + 63) / 64;
    std::vector<std::uint64_t> reads(p.n * words, 0);
    for (std::size_t i = 0; i < p.n; ++i)
        for (std::size_t j = 0; j < p.m; ++j)
            if (std::isfinite(mask(i, j))) {
                reads[i * words + j / 64] |= std::uint64_t{1} << (j % 64);
                ++facts.scored_pairs;
            }
    facts.density = static_cast<double>(facts.scored_pairs) / (static_cast<double>(p.n) * static_cast<double>(p.m));
    if (p.n != p.m || p.cross_attention()) return facts;
    // Layer L's query i holds what its reads held after layer L − 1: a breadth-first
    // search from i over "reads", each hop one layer. Every token is in one frontier
    // only, so a search costs n · n/64 word operations, whatever the number of layers.
    Matrix reach(p.n, p.n, std::numeric_limits<double>::infinity());
    std::vector<std::uint64_t> seen(words), next(words);
    std::vector<std::size_t> frontier, grown;
    for (std::size_t i = 0; i < p.n; ++i) {
        std::fill(seen.begin(), seen.end(), 0);
        seen[i / 64] |= std::uint64_t{1} << (i % 64);
        reach(i, i) = 1;
        frontier.assign(1, i);
        for (double layers = 1; !frontier.empty(); ++layers) {
            std::fill(next.begin(), next.end(), 0);
            for (std::size_t u : frontier)
                for (std::size_t w = 0; w < words; ++w) next[w] |= reads[u * words + w];
            grown.clear();
            for (std::size_t w = 0; w < words; ++w) {
                std::uint64_t fresh = next[w] & ~seen[w];
                seen[w] |= fresh;
                for (; fresh; fresh &= fresh - 1) {
                    const std::size_t j = w * 64 + static_cast<std::size_t>(__builtin_ctzll(fresh));
                    reach(i, j) = layers;
                    grown.push_back(j);
                }
            }
            frontier.swap(grown);
        }
    }
    for (double x : reach.data())
        if (std::isfinite(x)) facts.reach_max = std::max(facts.reach_max, x);
    facts.reach = std::move(reach);
    return facts;
}

}  // namespace attn_trace
