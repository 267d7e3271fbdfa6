#pragma once
// A call's per-row key ranges as the GPU kernels and their CPU emulation read
// them: [first[i], end[i]) for every query row, all keys where the call has no
// row ranges; and what such a kernel cannot run. Inline: the CUDA library (linked
// after the main one) uses it too.
#include <string>
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

// Whether a float32 kernel that reads a call's masks only as these ranges can run
// `call`; when not, `why` says what it lacks, in words that name the kernel (`kernel`,
// "its fused kernel"). `widths` is the kernel's own refusal of the call's head widths,
// empty when it takes them. Both CUDA kernels answer `supports` with it.
inline bool range_kernel_takes(const AttentionCall& call, const std::string& kernel, const std::string& widths, std::string& why) {
    std::string missing;
    if (call.dtype != Dtype::f32) missing = " computes in float32 (⟦dtype⟧ f32)";
    else if (!widths.empty()) missing = " " + widths;
    else if (call.softcap) missing = " has no softcap";
    else if (call.mask && call.mask->has_elementwise())
        missing = " masks by key ranges only (causal, window, lengths), not by key_valid, ALiBi, dense masks or sparse patterns";
    else if (call.n() == 0 || call.m() == 0) missing = " needs n ≥ 1 and m ≥ 1";
    if (missing.empty()) return true;
    why = kernel + missing;
    return false;
}

}  // namespace attn_trace
