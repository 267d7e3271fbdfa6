#pragma once
// A call's per-row key ranges as the GPU kernels and their CPU emulation read
// them: [first[i], end[i]) for every query row, all keys where the call has no
// row ranges.
#include <vector>

#include "attn_trace/backend.hpp"

namespace attn_trace {

struct RowKeyRanges {
    std::vector<int> first, end;
};
RowKeyRanges row_key_ranges(const AttentionCall& call);

}  // namespace attn_trace
