#pragma once
// A call's per-row key ranges as the GPU kernels and their CPU emulation read
// them: [first[i], end[i]) for every query row, all keys where the call has no
// row ranges. Inline: the CUDA library (linked after the main one) uses it too.
#include <vector>

#include "attn_trace/backend.hpp"

namespace attn_trace {

struct RowKeyRanges {
    std::vector<int> first, end;
};

inline RowKeyRanges row_key_ranges(const AttentionCall& call) {
    const std::size_t n = call.n();
    RowKeyRanges ranges{std::vector<int>(n, 0), std::vector<int>(n, static_cast<int>(call.m()))};
    if (call.mask && !call.mask->first_key.empty())
        for (std::size_t i = 0; i < n; ++i) {
            ranges.first[i] = static_cast<int>(call.mask->first_key[i]);
            ranges.end[i] = static_cast<int>(call.mask->end_key[i]);
        }
    return ranges;
}

}  // namespace attn_trace
