// One (head, query block) of the fused kernel, per target: the online softmax over the
// key tiles its rows may read, panel by panel, on the packed operands; also the packing
// of K, V (tile by tile) and the block's queries, and the mask's key range of each row.
//
// Per-target code like panel_kernels-inl.hpp (hence its toggling include guard, no
// #pragma once). Only the kernel's one translation unit, fast_attention.cpp, includes
// it, which is what makes an unnamed namespace in a header safe here.
#if defined(ATTN_TRACE_BLOCK_WORKER_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTN_TRACE_BLOCK_WORKER_INL_H_
#undef ATTN_TRACE_BLOCK_WORKER_INL_H_
#else
#define ATTN_TRACE_BLOCK_WORKER_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <hwy/highway.h>

#include "attention_buffers-inl.hpp"
#include "fast_attention.hpp"
#include "panel_kernels-inl.hpp"

HWY_BEFORE_NAMESPACE();
namespace attn_trace::HWY_NAMESPACE {

namespace {

using panel::Simd;

// The keys [first, end) of query `row` (all keys without row ranges).
struct KeyRange {
    std::size_t first, end;
};
KeyRange key_range(const KeyMask* mask, std::size_t row, std::size_t m) {
    if (mask == nullptr || mask->first_key.empty()) return {0, m};
    return {mask->first_key[row], mask->end_key[row]};
}

// The keys some query of rows [i0, i0 + rows) reads (union) and those all of them read (common).
struct RowsKeyRange {
    KeyRange any, all;
};
RowsKeyRange rows_key_range(const KeyMask* mask, std::size_t i0, std::size_t rows, std::size_t m) {
    RowsKeyRange range{{m, 0}, {0, m}};
    for (std::size_t r = 0; r < rows; ++r) {
        const KeyRange row = key_range(mask, i0 + r, m);
        range.any = {std::min(range.any.first, row.first), std::max(range.any.end, row.end)};
        range.all = {std::max(range.all.first, row.first), std::min(range.all.end, row.end)};
    }
    return range;
}

// One call's work, shared by all its workers: its functions are const (the packed K and
// V are written only before any block runs), and each worker brings its own scratch.
template <typename T, typename Source>
class BlockWorker {
    using S = Simd<T>;
    using Vec = typename S::Vec;
    static constexpr std::size_t NR = panel::NR<T>;
    static constexpr std::size_t L = S::lanes;

public:
    BlockWorker(const FastAttentionInput<T, Source>& in, const FastAttentionOutput<T>& out, PackedKeysValues<T>& packed, std::size_t block_k)
        : in_(in), out_(out), packed_(packed), block_k_(block_k), d_v_padded_(round_up(in.d_v, MR)),
          // Softcap and additive biases act on s·QKᵀ itself; then the scores are
          // turned into base-2 units after them, else already in the packed queries.
          natural_units_(in.softcap.has_value() || (in.mask && (!in.mask->dense.empty() || !in.mask->alibi_slopes.empty()))),
          has_patterns_(in.mask && !in.mask->patterns.empty()) {}

    // A double kernel reading doubles reads K and V where they are, row by row: packed
    // copies would be as large as K and V, the largest buffers of a long sequence's call
    // (docs/PERFORMANCE.md#the-fast-paths-memory). A float kernel packs them, rounding
    // as it goes, in the order its products read them.
    static constexpr bool operands_in_place = std::is_same_v<T, double> && std::is_same_v<Source, double>;

    // Tile t of KV head g into `packed` (before any block runs).
    void pack_tile(std::size_t g, std::size_t t) const {
        if constexpr (operands_in_place) return;
        const std::size_t j0 = t * block_k_, cols = std::min(block_k_, in_.m - j0);
        pack_keys(in_.k + j0 * in_.k_stride + g * in_.d_k, cols, packed_.keys_of(g, t));
        pack_values(in_.v + j0 * in_.v_stride + g * in_.d_v, cols, packed_.values_of(g, t));
    }

    // K's and V's tile t of KV head g: packed, or its first row in place.
    const T* keys_of(std::size_t g, std::size_t t) const {
        if constexpr (operands_in_place) return in_.k + t * block_k_ * in_.k_stride + g * in_.d_k;
        else return packed_.keys_of(g, t);
    }
    const T* values_of(std::size_t g, std::size_t t) const {
        if constexpr (operands_in_place) return in_.v + t * block_k_ * in_.v_stride + g * in_.d_v;
        else return packed_.values_of(g, t);
    }

    // One query block [i0, i0 + rows) of head h, with its tile counts added to `stats`.
    void run(int h, std::size_t i0, std::size_t rows, BlockScratch<T>& scratch, AttentionStats& stats) const {
        const std::size_t hq = static_cast<std::size_t>(h), g = hq / static_cast<std::size_t>(in_.heads / in_.kv_heads);  // GQA
        const std::size_t panels = (rows + NR - 1) / NR;
        pack_queries(in_.q + i0 * in_.q_stride + hq * in_.d_k, rows, scratch);
        std::fill_n(scratch.running_max.data(), panels * NR, minus_infinity<T>);
        std::fill_n(scratch.running_sum.data(), panels * NR, T(0));
        std::fill_n(scratch.u.data(), panels * d_v_padded_ * NR, T(0));

        const KeyRange block = rows_key_range(in_.mask, i0, rows, in_.m).any;
        std::size_t computed = 0;
        for (std::size_t j0 = block.first / block_k_ * block_k_; j0 < block.end; j0 += block_k_) {
            const std::size_t t = j0 / block_k_, cols = std::min(block_k_, in_.m - j0);
            if (has_patterns_ && !in_.mask->patterns_touch(i0, i0 + rows, j0, j0 + cols, in_.n, in_.m)) continue;  // no pair scored
            ++computed;
            for (std::size_t p = 0; p < panels; ++p) attend_panel(h, i0, rows, p, j0, cols, keys_of(g, t), values_of(g, t), scratch);
        }
        stats.tiles_computed += computed;
        stats.tiles_skipped += packed_.tiles - computed;
        write_rows(h, i0, rows, scratch);
    }

private:
    // Panel p (rows p·NR …) of the block against tile [j0, j0 + cols), restricted
    // to the keys some row of the panel reads (a causal diagonal skips the rest).
    void attend_panel(int h, std::size_t i0, std::size_t rows, std::size_t p, std::size_t j0, std::size_t cols, const T* keys, const T* values,
                      BlockScratch<T>& scratch) const {
        const std::size_t first_row = i0 + p * NR, panel_rows = std::min(NR, rows - p * NR);
        const RowsKeyRange range = rows_key_range(in_.mask, first_row, panel_rows, in_.m);
        const std::size_t lo = std::max(range.any.first, j0), hi = std::min(range.any.end, j0 + cols);
        if (lo >= hi || (has_patterns_ && !in_.mask->patterns_touch(first_row, first_row + panel_rows, lo, hi, in_.n, in_.m))) return;
        const PanelTile tile{h, first_row, panel_rows, p, j0, keys, values};
        // A tile the patterns score whole needs no check of its pairs.
        const bool patterned = has_patterns_ && !in_.mask->patterns_cover(first_row, first_row + panel_rows, lo, hi, in_.n, in_.m);
        if (natural_units_ || (in_.mask && !in_.mask->key_valid.empty()) || patterned) {
            attend_keys(tile, lo - j0, hi - j0, true, patterned, scratch);
            return;
        }
        // Only the rows' key ranges mask here: the keys every row of the panel reads
        // take the unmasked way, and only the edges (a causal diagonal, a window's
        // ends: fewer than NR keys each) are masked row by row. Without the split a
        // causal diagonal tile went the masked way whole: 13 % of the causal kernel's
        // samples at n = 8192, though at most 2 % of its time (docs/PERFORMANCE.md#the-causal-pass).
        const std::size_t c0 = std::clamp(range.all.first, lo, hi), c1 = std::clamp(range.all.end, c0, hi);
        if (lo < c0) attend_keys(tile, lo - j0, c0 - j0, true, false, scratch);
        if (c0 < c1) attend_keys(tile, c0 - j0, c1 - j0, false, false, scratch);
        if (c1 < hi) attend_keys(tile, c1 - j0, hi - j0, true, false, scratch);
    }

    // Which panel meets which tile: what attend_keys needs besides the keys' range.
    struct PanelTile {
        int h;
        std::size_t first_row, panel_rows, p, j0;
        const T *keys, *values;
    };

    // Keys [a, b) of the tile for the panel, `adjusted` when some of their scores need
    // changing (mask, softcap, bias, base-2 units) before the softmax.
    void attend_keys(const PanelTile& tile, std::size_t a, std::size_t b, bool adjusted, bool patterned, BlockScratch<T>& scratch) const {
        T* const s = scratch.scores.data();
        const T* q_panel = scratch.queries.data() + tile.p * in_.d_k * NR;
        if (adjusted || !exp_in_place(tile.p, a, b, tile.keys, q_panel, scratch)) {
            // S = s·Q_p K_tᵀ, as (keys, NR) rows, MR keys at a time; then the softmax step over it
            for (std::size_t group = a / MR; group * MR < b; ++group) score_group(tile.keys, group * MR, b, q_panel, s);
            if (adjusted) adjust_scores(s, tile.h, tile.first_row, tile.panel_rows, tile.j0, a, b, patterned);
            online_softmax(tile.p, a, b, scratch);
            accumulate_values(tile.p, a, b, tile.values, scratch);
            return;
        }
        accumulate_values(tile.p, a, b, tile.values, scratch);
        raise_running_max(tile.p, scratch);
    }

    // S's rows [first, first + MR) for the panel: the products of MR keys with its queries.
    // Read in place, only the keys before `end` (past the last one there is no row).
    void score_group(const T* keys, std::size_t first, std::size_t end, const T* q_panel, T* s) const {
        if constexpr (operands_in_place)
            panel::micro_kernel_rows<T, false>(std::min(MR, end - first), in_.d_k, keys + first * in_.k_stride, q_panel, s + first * NR, 1, in_.k_stride);
        else
            panel::micro_kernel<T, false>(in_.d_k, keys + first * in_.d_k, q_panel, s + first * NR);
    }

    // U_p += P V_t over keys [a, b) of the tile.
    void accumulate_values(std::size_t p, std::size_t a, std::size_t b, const T* values, BlockScratch<T>& scratch) const {
        T* u_panel = scratch.u.data() + p * d_v_padded_ * NR;
        for (std::size_t dims = 0; dims < in_.d_v; dims += MR) {
            const T* v = operands_in_place ? values + a * in_.v_stride + dims : values + dims * block_k_ + a * MR;
            panel::micro_kernel_rows<T, true>(std::min(MR, in_.d_v - dims), b - a, v, scratch.scores.data() + a * NR, u_panel + dims * NR,
                                              operands_in_place ? in_.v_stride : MR);
        }
    }

    // The common case, keys [a, b) of a tile that every row of the panel reads
    // (no mask edge, no softcap, no bias), after a first tile: P = 2^(S − m) computed group by group right after the first
    // product writes it, shifted by the running max m from before this tile
    // instead of after it, which spares a pass over S to find its max first.
    // Safe while no score passes m by more than 16 (P ≤ 2^16, so U stays finite
    // unless |V| passes about 1e31); returns false, having changed nothing that
    // counts, when one does (or when a row has no running max yet), and the
    // caller takes the two-pass way. The tile's max waits in `tile_max` for raise_running_max.
    bool exp_in_place(std::size_t p, std::size_t a, std::size_t b, const T* keys, const T* q_panel, BlockScratch<T>& scratch) const {
        T* const s = scratch.scores.data();
        T* const m = scratch.running_max.data() + p * NR;
        const Vec shift0 = S::load(m), shift1 = S::load(m + L);
        if (any_lane(shift0 == S::splat(minus_infinity<T>)) || any_lane(shift1 == S::splat(minus_infinity<T>))) return false;
        Vec max0 = shift0, max1 = shift1, sum0{}, sum1{};
        for (std::size_t group = a / MR; group * MR < b; ++group) {
            // The group's MR rows of S, then at once (still in L1) their 2^(S − m):
            // padding past the tile's last key and keys outside [a, b) are left out.
            const std::size_t first = group * MR;
            score_group(keys, first, b, q_panel, s);
            auto take = [&](std::size_t j) {
                const Vec z0 = S::load(s + j * NR), z1 = S::load(s + j * NR + L);
                max0 = S::max(max0, z0);
                max1 = S::max(max1, z1);
                const Vec e0 = panel::exp2_bounded(z0 - shift0), e1 = panel::exp2_bounded(z1 - shift1);
                S::store(s + j * NR, e0);
                S::store(s + j * NR + L, e1);
                sum0 += e0;
                sum1 += e1;
            };
            if (first >= a && first + MR <= b) {
                // A whole group, unrolled: 2·MR independent exponentials for the scheduler to overlap.
#pragma GCC unroll 8
                for (std::size_t r = 0; r < MR; ++r) take(first + r);
            } else {
                for (std::size_t j = std::max(first, a); j < std::min(first + MR, b); ++j) take(j);
            }
        }
        const Vec limit = S::splat(T(16));
        if (any_lane(max0 - shift0 > limit) || any_lane(max1 - shift1 > limit)) return false;
        T* const l = scratch.running_sum.data() + p * NR;
        S::store(l, S::load(l) + sum0);
        S::store(l + L, S::load(l + L) + sum1);
        S::store(scratch.tile_max.data(), max0);
        S::store(scratch.tile_max.data() + L, max1);
        return true;
    }

    // After exp_in_place and U_p += P V_t: m' = max(m, tile max); ℓ and U ·= 2^(m − m'); m = m'.
    void raise_running_max(std::size_t p, BlockScratch<T>& scratch) const {
        for (std::size_t half = 0; half < NR; half += L) {
            T* const m = scratch.running_max.data() + p * NR + half;
            const Vec m_old = S::load(m), m_new = S::load(scratch.tile_max.data() + half);
            if (!any_lane(m_new > m_old)) continue;
            const Vec rescale = panel::exp2_bounded(m_old - m_new);
            T* const l = scratch.running_sum.data() + p * NR + half;
            S::store(l, rescale * S::load(l));
            S::store(m, m_new);
            scale_u(p, half, rescale, scratch);
        }
    }

    // U_row ·= r for the lanes [half, half + L) of panel p.
    void scale_u(std::size_t p, std::size_t half, Vec rescale, BlockScratch<T>& scratch) const {
        T* const u = scratch.u.data() + p * d_v_padded_ * NR + half;
        for (std::size_t c = 0; c < in_.d_v; ++c) S::store(u + c * NR, rescale * S::load(u + c * NR));
    }

    // Whether a comparison's result (lanes all ones or all zeros) is true in some
    // lane: its bytes OR-ed as 64-bit words, not a branch per lane.
    template <typename Mask>
    static bool any_lane(Mask mask) {
        constexpr std::size_t count = sizeof mask / sizeof(std::uint64_t);
        std::uint64_t words[count];
        std::memcpy(words, &mask, sizeof words);
        std::uint64_t any = 0;
        for (std::size_t w = 0; w < count; ++w) any |= words[w];
        return any != 0;
    }

    // Per lane (query) of the panel, over keys [a, b) of the tile: m' = max(m, max_j z_j),
    // z_j ← 2^(z_j − m'), ℓ = 2^(m − m')·ℓ + Σ_j, U_row ·= 2^(m − m').
    void online_softmax(std::size_t p, std::size_t a, std::size_t b, BlockScratch<T>& scratch) const {
        T* const s = scratch.scores.data();
        for (std::size_t half = 0; half < NR; half += L) {
            T* const m = scratch.running_max.data() + p * NR + half;
            T* const l = scratch.running_sum.data() + p * NR + half;
            const Vec m_old = S::load(m);
            // Two running maxima and sums: each loop is one dependency chain otherwise.
            Vec max_even = m_old, max_odd = m_old;
            std::size_t j = a;
            for (; j + 1 < b; j += 2) {
                max_even = S::max(max_even, S::load(s + j * NR + half));
                max_odd = S::max(max_odd, S::load(s + (j + 1) * NR + half));
            }
            if (j < b) max_even = S::max(max_even, S::load(s + j * NR + half));
            const Vec m_new = S::max(max_even, max_odd);
            // A row that has read no visible key yet keeps m = −∞; shifting by 0
            // there keeps its weights exactly 0 instead of −∞ − (−∞) = NaN.
            const Vec shift = m_new == S::splat(minus_infinity<T>) ? Vec{} : m_new;
            Vec sum_even{}, sum_odd{};
            for (j = a; j + 1 < b; j += 2) {
                const Vec e0 = panel::exp2_bounded(S::load(s + j * NR + half) - shift);
                const Vec e1 = panel::exp2_bounded(S::load(s + (j + 1) * NR + half) - shift);
                S::store(s + j * NR + half, e0);
                S::store(s + (j + 1) * NR + half, e1);
                sum_even += e0;
                sum_odd += e1;
            }
            if (j < b) {
                const Vec e = panel::exp2_bounded(S::load(s + j * NR + half) - shift);
                S::store(s + j * NR + half, e);
                sum_even += e;
            }
            const Vec sum = sum_even + sum_odd;
            const Vec rescale = panel::exp2_bounded(m_old - shift);
            S::store(l, rescale * S::load(l) + sum);
            S::store(m, m_new);
            scale_u(p, half, rescale, scratch);
        }
    }

    // Q_b into panels, times s (and log₂e unless the scores need adjusting in natural units first).
    void pack_queries(const Source* q_block, std::size_t rows, BlockScratch<T>& scratch) const {
        const T factor = static_cast<T>(in_.scale * (natural_units_ ? 1.0 : log2_e));
        const std::size_t padded = round_up(rows, NR);
        for (std::size_t r = 0; r < padded; ++r) {
            T* dst = scratch.queries.data() + (r / NR) * in_.d_k * NR + r % NR;
            if (r >= rows) {
                for (std::size_t c = 0; c < in_.d_k; ++c) dst[c * NR] = T(0);
                continue;
            }
            const Source* src = q_block + r * in_.q_stride;
            for (std::size_t c = 0; c < in_.d_k; ++c) dst[c * NR] = factor * static_cast<T>(src[c]);
        }
    }

    // K_t into groups of MR keys, [group][d_k][MR]: MR rows side by side, zero past the last key.
    void pack_keys(const Source* k_tile, std::size_t cols, T* dst) const {
        for (std::size_t j = 0; j < cols; j += MR, dst += MR * in_.d_k) {
            const std::size_t rows = std::min(MR, cols - j);
            if (rows < MR) std::fill_n(dst, MR * in_.d_k, T(0));
            for (std::size_t c = 0; c < in_.d_k; ++c)
                for (std::size_t r = 0; r < rows; ++r) dst[c * MR + r] = static_cast<T>(k_tile[(j + r) * in_.k_stride + c]);
        }
    }

    // V_t into groups of MR dimensions, [group][Bc][MR]: zero past d_v.
    void pack_values(const Source* v_tile, std::size_t cols, T* values) const {
        for (std::size_t j = 0; j < cols; ++j) {
            const Source* src = v_tile + j * in_.v_stride;
            for (std::size_t c = 0; c < d_v_padded_; ++c)
                values[(c / MR * block_k_ + j) * MR + c % MR] = c < in_.d_v ? static_cast<T>(src[c]) : T(0);
        }
    }

    // Over keys [a, b) of the tile at j0, rows first_row …: z = c·tanh(z / c) before the
    // mask (docs/PROBLEM.md#scale-softcap-empty-rows; after it, tanh(−∞)·c = −c would
    // unmask), then −∞ outside the row's key range or for an invalid key, else + the
    // ALiBi and dense biases (summed in double, as the reference's M); then into base-2
    // units.
    void adjust_scores(T* s, int h, std::size_t first_row, std::size_t panel_rows, std::size_t j0, std::size_t a, std::size_t b, bool patterned) const {
        const KeyMask* mask = in_.mask;
        const double slope = mask && !mask->alibi_slopes.empty() ? mask->alibi_slopes[static_cast<std::size_t>(h)] : 0.0;
        const long offset = static_cast<long>(in_.m) - static_cast<long>(in_.n);
        const T units = static_cast<T>(natural_units_ ? log2_e : 1.0);
        for (std::size_t r = 0; r < panel_rows; ++r) {
            const std::size_t i = first_row + r;
            const KeyRange range = key_range(mask, i, in_.m);
            for (std::size_t jt = a; jt < b; ++jt) {
                T& z = s[jt * NR + r];
                const std::size_t j = j0 + jt;
                if (in_.softcap) z = static_cast<T>(*in_.softcap) * std::tanh(z / static_cast<T>(*in_.softcap));
                if (j < range.first || j >= range.end || (mask && !mask->key_valid.empty() && !mask->key_valid[j]) ||
                    (patterned && !mask->patterns_allow(i, j, in_.n, in_.m))) {
                    z = minus_infinity<T>;
                    continue;
                }
                double bias = 0.0;
                if (slope != 0.0) bias -= slope * std::fabs(static_cast<double>(static_cast<long>(i) + offset - static_cast<long>(j)));
                if (mask && !mask->dense.empty()) bias += mask->dense(i, j);
                if (bias != 0.0) z = static_cast<T>(static_cast<double>(z) + bias);
                z *= units;
            }
        }
    }

    // O_b = U / ℓ, and the final m (back in natural units) and ℓ of each row.
    void write_rows(int h, std::size_t i0, std::size_t rows, const BlockScratch<T>& scratch) const {
        const std::size_t hq = static_cast<std::size_t>(h);
        for (std::size_t r = 0; r < rows; ++r) {
            const T m = scratch.running_max.data()[r], l = scratch.running_sum.data()[r];
            const T* u = scratch.u.data() + (r / NR) * d_v_padded_ * NR + r % NR;
            T* o = out_.out + (i0 + r) * (static_cast<std::size_t>(in_.heads) * in_.d_v) + hq * in_.d_v;
            for (std::size_t c = 0; c < in_.d_v; ++c) o[c] = m == minus_infinity<T> ? out_.empty_row_value : u[c * NR] / l;
            if (out_.row_max) out_.row_max[hq * in_.n + i0 + r] = static_cast<T>(static_cast<double>(m) / log2_e);
            if (out_.row_sum) out_.row_sum[hq * in_.n + i0 + r] = l;
        }
    }

    const FastAttentionInput<T, Source>& in_;
    const FastAttentionOutput<T>& out_;
    PackedKeysValues<T>& packed_;
    std::size_t block_k_, d_v_padded_;
    bool natural_units_;
    bool has_patterns_;  // sparse patterns: tiles with no scored pair are skipped
};

}  // namespace

}  // namespace attn_trace::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // ATTN_TRACE_BLOCK_WORKER_INL_H_
