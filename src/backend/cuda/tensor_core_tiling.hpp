#pragma once
// The tiling of the tensor-core attention kernel (backend_cuda_tensor_cores.cu),
// shared with its CPU emulation (src/backend/tensor_core_emulation.cpp) so that
// the two walk the same tiles: a block of 64 query rows (4 warps of 16, the WMMA
// tile's height) against tiles of 64 keys, skipping the tiles no row of the block
// may read (causal, window, lengths), and the order of the operations in each:
// S = Q Kᵀ in f32 from 16-bit inputs, the online softmax in f32, P rounded to the
// input type, O += P V in f32; and which calls it takes.
#include <string>

#include "attn_trace/backend.hpp"
#include "attn_trace/host_device.hpp"
#include "backend/row_key_ranges.hpp"

namespace attn_trace::tensor_cores {

inline constexpr int warps = 4;
inline constexpr int rows_per_warp = 16;                 // one WMMA tile
inline constexpr int block_rows = warps * rows_per_warp;  // Br
inline constexpr int tile_keys = 64;                      // Bc

// Whether the kernel takes `call` (CudaBackend::supports's answer for
// tensor_core_attention, which needs no device); when not, `why` says what it lacks.
inline bool takes(const AttentionCall& call, std::string& why) {
    const bool widths = call.d_k == call.d_v && (call.d_k == 64 || call.d_k == 128);
    return range_kernel_takes(call, "the tensor-core kernel",
                              widths ? "" : "takes d_k = d_v = 64 or 128, found d_k = " + std::to_string(call.d_k) + ", d_v = " + std::to_string(call.d_v), why);
}

// The keys [first, end) some row of [row0, row0 + rows) may read.
struct KeySpan {
    int first, end;
};
ATTN_TRACE_HOST_DEVICE inline KeySpan block_keys(const int* first_key, const int* end_key, int row0, int rows, int m) {
    KeySpan span{m, 0};
    for (int r = row0; r < row0 + rows; ++r) {
        if (first_key[r] >= end_key[r]) continue;  // a row that reads nothing widens nothing
        span.first = first_key[r] < span.first ? first_key[r] : span.first;
        span.end = end_key[r] > span.end ? end_key[r] : span.end;
    }
    return span;
}

// The tiles [first_tile, end_tile) of tile_keys keys that overlap the span (none when it is empty).
ATTN_TRACE_HOST_DEVICE inline int first_tile(KeySpan span) { return span.first < span.end ? span.first / tile_keys : 0; }
ATTN_TRACE_HOST_DEVICE inline int end_tile(KeySpan span) { return span.first < span.end ? (span.end + tile_keys - 1) / tile_keys : 0; }

}  // namespace attn_trace::tensor_cores
