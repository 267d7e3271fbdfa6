#include "row_key_ranges.hpp"

namespace attn_trace {

RowKeyRanges row_key_ranges(const AttentionCall& call) {
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
