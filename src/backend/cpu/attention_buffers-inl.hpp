// What the fused kernel works in, per target: K and V packed tile by tile (shared by all
// workers), each worker's block scratch (packed queries, one panel's scores, the running
// m, ℓ and U), and the few constants and helpers the kernel's files share.
//
// Per-target code like panel_kernels-inl.hpp (hence its toggling include guard, no
// #pragma once). Only the kernel's one translation unit, fast_attention.cpp, includes
// it, which is what makes an unnamed namespace in a header safe here.
#if defined(ATTN_TRACE_ATTENTION_BUFFERS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTN_TRACE_ATTENTION_BUFFERS_INL_H_
#undef ATTN_TRACE_ATTENTION_BUFFERS_INL_H_
#else
#define ATTN_TRACE_ATTENTION_BUFFERS_INL_H_
#endif

#include <cstddef>
#include <limits>

#include <hwy/highway.h>

#include "panel_kernels-inl.hpp"

HWY_BEFORE_NAMESPACE();
namespace attn_trace::HWY_NAMESPACE {

namespace {

using panel::AlignedArray;
using panel::MR;

constexpr double log2_e = 1.4426950408889634;

template <typename T>
constexpr T minus_infinity = -std::numeric_limits<T>::infinity();

std::size_t round_up(std::size_t x, std::size_t step) { return (x + step - 1) / step * step; }

// K and V of every KV head, packed tile by tile, each tile in one piece:
// keys [head][tile][group of MR keys][d_k][MR] (the last group zero past the
// last key) and values [head][tile][group of MR dimensions][Bc][MR] (zero past
// d_v); none when the kernel reads K and V in place. A last tile shorter than Bc
// leaves the rest of its slot unwritten and unread.
template <typename T>
struct PackedKeysValues {
    std::size_t tiles, key_tile, value_tile;  // tiles per head; elements per packed tile
    AlignedArray<T> keys, values;
    PackedKeysValues(std::size_t kv_heads, std::size_t m, std::size_t block_k, std::size_t d_k, std::size_t d_v, bool in_place)
        : tiles((m + block_k - 1) / block_k),
          key_tile(in_place ? 0 : round_up(block_k, MR) * d_k),
          value_tile(in_place ? 0 : round_up(d_v, MR) * block_k),
          keys(kv_heads * tiles * key_tile),
          values(kv_heads * tiles * value_tile) {}
    T* keys_of(std::size_t g, std::size_t t) const { return keys.data() + (g * tiles + t) * key_tile; }
    T* values_of(std::size_t g, std::size_t t) const { return values.data() + (g * tiles + t) * value_tile; }
};

// The per-worker scratch (sizes for Br, Bc): packed queries, one panel's scores,
// and the running m, ℓ and U of the block.
template <typename T>
struct BlockScratch {
    static constexpr std::size_t NR = panel::NR<T>;
    AlignedArray<T> queries;  // [panel][d_k][NR]   s·Q_b, zero past the last row
    AlignedArray<T> scores;   // [Bc rounded to MR][NR] one panel's S, then P
    AlignedArray<T> u;        // [panel][d_v rounded to MR][NR]
    AlignedArray<T> running_max, running_sum;  // [panels · NR]
    AlignedArray<T> tile_max;                  // [NR] the max of one panel's scores in one tile
    BlockScratch(std::size_t block_q, std::size_t block_k, std::size_t d_k, std::size_t d_v)
        : queries(round_up(block_q, NR) * d_k),
          scores(round_up(block_k, MR) * NR),
          u(round_up(block_q, NR) * round_up(d_v, MR)),
          running_max(round_up(block_q, NR)),
          running_sum(round_up(block_q, NR)),
          tile_max(NR) {}
};

}  // namespace

}  // namespace attn_trace::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTN_TRACE_ATTENTION_BUFFERS_INL_H_
