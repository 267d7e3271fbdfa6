#include "attn_trace/sparse_pattern.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attn_trace/random.hpp"

namespace attn_trace {

namespace {

// How many blocks the query blocks sit from the start of the key blocks when
// aligned to their end (bottom-right), as the window masks do with tokens (docs/PROBLEM.md#window).
long block_offset(const SparsePattern& p, std::size_t n, std::size_t m) {
    return static_cast<long>(block_count(m, p.block)) - static_cast<long>(block_count(n, p.block));
}

bool in_window(const SparsePattern& p, long query_block, long key_block, long offset) {
    const long row = query_block + offset;
    return p.has_window && row - p.window_left <= key_block && key_block <= row + p.window_right;
}

bool is_global(const SparsePattern& p, std::size_t block) { return std::binary_search(p.global.begin(), p.global.end(), block); }

// Whether key block J holds a key that some query of query block I may read under
// the causal rule j ≤ i + (m − n): its first key against I's last query.
bool causal_reachable(const SparsePattern& p, std::size_t I, std::size_t J, std::size_t n, std::size_t m) {
    const long last_query = static_cast<long>(std::min(n, (I + 1) * p.block)) - 1;
    return static_cast<long>(J * p.block) <= last_query + static_cast<long>(m) - static_cast<long>(n);
}

// The block-level union of the parts, before the causal rule.
bool block_visible(const SparsePattern& p, std::size_t I, std::size_t J, long offset) {
    if (in_window(p, static_cast<long>(I), static_cast<long>(J), offset) || is_global(p, I) || is_global(p, J)) return true;
    if (p.random_blocks.empty()) return false;
    const auto& drawn = p.random_blocks[I];
    return std::binary_search(drawn.begin(), drawn.end(), J);
}

}  // namespace

std::size_t block_count(std::size_t tokens, std::size_t block) { return (tokens + block - 1) / block; }

void resolve_random(SparsePattern& p, std::size_t n, std::size_t m) {
    p.random_blocks.clear();
    p.resolved_n = n;
    p.resolved_m = m;
    if (!p.has_random) return;
    const std::size_t query_blocks = block_count(n, p.block), key_blocks = block_count(m, p.block);
    const long offset = block_offset(p, n, m);
    PortableRandom generator(p.seed);
    p.random_blocks.resize(query_blocks);
    std::vector<std::size_t> candidates;
    for (std::size_t I = 0; I < query_blocks; ++I) {
        candidates.clear();
        for (std::size_t J = 0; J < key_blocks; ++J)
            if (!block_visible(p, I, J, offset) && (!p.causal || causal_reachable(p, I, J, n, m))) candidates.push_back(J);
        const std::size_t take = std::min(p.per_row, candidates.size());
        for (std::size_t k = 0; k < take; ++k) {
            const auto pick = k + static_cast<std::size_t>(generator.uniform() * static_cast<double>(candidates.size() - k));
            std::swap(candidates[k], candidates[pick]);
        }
        auto& drawn = p.random_blocks[I];
        drawn.assign(candidates.begin(), candidates.begin() + static_cast<long>(take));
        std::sort(drawn.begin(), drawn.end());
    }
}

bool sparse_visible(const SparsePattern& p, std::size_t i, std::size_t j, std::size_t n, std::size_t m) {
    if (p.causal && static_cast<long>(j) > static_cast<long>(i) + static_cast<long>(m) - static_cast<long>(n)) return false;
    return block_visible(p, i / p.block, j / p.block, block_offset(p, n, m));
}

bool sparse_touches(const SparsePattern& p, std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1, std::size_t n, std::size_t m) {
    if (i0 >= i1 || j0 >= j1) return false;
    // With the causal rule, the tile's first key against its last query.
    if (p.causal && static_cast<long>(j0) > static_cast<long>(i1 - 1) + static_cast<long>(m) - static_cast<long>(n)) return false;
    const std::size_t I0 = i0 / p.block, I1 = (i1 - 1) / p.block, J0 = j0 / p.block, J1 = (j1 - 1) / p.block;
    const long offset = block_offset(p, n, m);
    // The window's key blocks over the query blocks I0 … I1 form one interval.
    if (p.has_window && static_cast<long>(I0) + offset - p.window_left <= static_cast<long>(J1) &&
        static_cast<long>(J0) <= static_cast<long>(I1) + offset + p.window_right)
        return true;
    for (std::size_t g : p.global)
        if ((I0 <= g && g <= I1) || (J0 <= g && g <= J1)) return true;
    if (!p.random_blocks.empty())
        for (std::size_t I = I0; I <= I1; ++I) {
            const auto& drawn = p.random_blocks[I];
            const auto first = std::lower_bound(drawn.begin(), drawn.end(), J0);
            if (first != drawn.end() && *first <= J1) return true;
        }
    return false;
}

bool sparse_covers(const SparsePattern& p, std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1, std::size_t n, std::size_t m) {
    if (i0 >= i1 || j0 >= j1) return true;
    if (p.causal && static_cast<long>(j1 - 1) > static_cast<long>(i0) + static_cast<long>(m) - static_cast<long>(n)) return false;
    const std::size_t I0 = i0 / p.block, I1 = (i1 - 1) / p.block, J0 = j0 / p.block, J1 = (j1 - 1) / p.block;
    if ((I1 - I0 + 1) * (J1 - J0 + 1) > 64) return false;
    const long offset = block_offset(p, n, m);
    for (std::size_t I = I0; I <= I1; ++I)
        for (std::size_t J = J0; J <= J1; ++J)
            if (!block_visible(p, I, J, offset)) return false;
    return true;
}

std::uint64_t sparse_scored_pairs(const SparsePattern& p, std::size_t n, std::size_t m) {
    const std::size_t query_blocks = block_count(n, p.block), key_blocks = block_count(m, p.block);
    const long offset = block_offset(p, n, m);
    std::uint64_t total = 0;
    std::vector<std::pair<std::size_t, std::size_t>> ranges;  // the key ranges [first, end) query block I scores
    for (std::size_t I = 0; I < query_blocks; ++I) {
        ranges.clear();
        long window_first = 0, window_last = -1;
        if (is_global(p, I)) {
            ranges.push_back({0, m});
        } else {
            if (p.has_window) {
                window_first = std::max(0L, static_cast<long>(I) + offset - p.window_left);
                window_last = std::min(static_cast<long>(key_blocks) - 1, static_cast<long>(I) + offset + p.window_right);
                if (window_first <= window_last)
                    ranges.push_back({static_cast<std::size_t>(window_first) * p.block, std::min(m, static_cast<std::size_t>(window_last + 1) * p.block)});
            }
            std::vector<std::size_t> others(p.global);  // global key blocks, and random ones, outside the window
            if (!p.random_blocks.empty()) others.insert(others.end(), p.random_blocks[I].begin(), p.random_blocks[I].end());
            std::sort(others.begin(), others.end());
            others.erase(std::unique(others.begin(), others.end()), others.end());
            for (std::size_t J : others)
                if (J < key_blocks && !(window_first <= static_cast<long>(J) && static_cast<long>(J) <= window_last))
                    ranges.push_back({J * p.block, std::min(m, (J + 1) * p.block)});
        }
        for (std::size_t i = I * p.block; i < std::min(n, (I + 1) * p.block); ++i) {
            // With the causal rule, keys past i + (m − n) are not scored.
            const long limit = p.causal ? static_cast<long>(i) + static_cast<long>(m) - static_cast<long>(n) + 1 : static_cast<long>(m);
            for (const auto& [first, end] : ranges)
                total += static_cast<std::uint64_t>(std::max(0L, std::min(static_cast<long>(end), limit) - static_cast<long>(first)));
        }
    }
    return total;
}

std::string describe_sparse(const SparsePattern& p) {
    std::vector<std::string> parts;
    if (p.block > 1) parts.push_back(fmt::format("block {}", p.block));
    if (p.has_window) parts.push_back(fmt::format("window left {}, right {}", p.window_left, p.window_right));
    if (!p.global.empty()) parts.push_back(fmt::format("global [{}]", fmt::join(p.global, ", ")));
    if (p.has_random) parts.push_back(fmt::format("random {} per row, seed {}", p.per_row, p.seed));
    if (p.causal) parts.push_back("causal");
    return fmt::format("sparse({})", fmt::join(parts, "; "));
}

}  // namespace attn_trace
