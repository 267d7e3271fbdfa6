#pragma once
// Sparse attention patterns
// (docs/FAMILY.md#sparse-patterns-which-pairs-are-scored-at-all): which (query, key)
// pairs are scored at all, as Longformer (windows and global tokens) and BigBird (the
// same on blocks, plus random blocks) choose them. A key is visible when ANY part allows
// it; `causal` then intersects the union with j ≤ i + (m − n).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attn_trace {

struct SparsePattern {
    std::size_t block = 1;  // b: the parts act on blocks of b queries × b keys (1 = single tokens)
    bool has_window = false;
    long window_left = 0, window_right = 0;  // on block indices, bottom-right aligned (as the window masks, docs/PROBLEM.md#window)
    std::vector<std::size_t> global;         // block indices that read every block and are read by every block
    bool has_random = false;
    std::size_t per_row = 0;                 // further key blocks drawn per query block
    std::uint64_t seed = 0;
    bool causal = false;

    // The random key blocks of each query block, drawn for n queries and m keys by
    // resolve_random (sorted). Empty until then, or without `random`.
    std::vector<std::vector<std::size_t>> random_blocks;
    std::size_t resolved_n = 0, resolved_m = 0;
};

std::size_t block_count(std::size_t tokens, std::size_t block);  // ⌈tokens / block⌉

// Draws `random`'s key blocks for n queries and m keys: for each query block in
// order, per_row blocks (all of them when fewer remain) among those its window
// and global parts leave unseen (and, with `causal`, that hold a key it may
// read), by a partial Fisher–Yates shuffle of them in ascending order with the
// portable generator seeded by `seed`. tools/make_golden.py draws the same way.
void resolve_random(SparsePattern& pattern, std::size_t n, std::size_t m);

// Whether query i (of n) may read key j (of m). `random` must be resolved for n, m.
bool sparse_visible(const SparsePattern& pattern, std::size_t i, std::size_t j, std::size_t n, std::size_t m);

// Whether some query of [i0, i1) may read some key of [j0, j1): false lets a
// kernel skip the tile whole. Never false when a pair is visible; may be true
// for a tile whose only candidate pairs the causal rule removes.
bool sparse_touches(const SparsePattern& pattern, std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1, std::size_t n,
                    std::size_t m);

// How many (query, key) pairs the pattern scores for n queries and m keys,
// counted block by block (never pair by pair): what `cost --sparse` reports.
std::uint64_t sparse_scored_pairs(const SparsePattern& pattern, std::size_t n, std::size_t m);

// Whether every query of [i0, i1) may read every key of [j0, j1), so a kernel can
// leave the tile's scores unchecked. May be false for a covered tile spanning more
// than 64 blocks (it is then checked pair by pair, which is still right).
bool sparse_covers(const SparsePattern& pattern, std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1, std::size_t n, std::size_t m);

// "sparse(block 2, window ±1, global [0], random 1/row seed 7, causal)".
std::string describe_sparse(const SparsePattern& pattern);

}  // namespace attn_trace
