// The tensor-core kernel's arithmetic on the CPU, tile by tile in the kernel's
// order; the sums over d_k and over a tile's keys run in index order here and in
// the tensor cores' own order there, so the two agree to float32 rounding, not bit
// for bit.
#include "tensor_core_emulation.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "attn_trace/half_float.hpp"
#include "attn_trace/online_softmax.hpp"
#include "backend/cuda/tensor_core_tiling.hpp"
#include "row_key_ranges.hpp"

namespace attn_trace {

float round_to_half(float x, HalfType type) { return type == HalfType::bf16 ? round_to_bf16(x) : round_to_f16(x); }

AttentionResult emulate_tensor_core_attention(const AttentionCall& call) {
    using namespace tensor_cores;
    const int n = static_cast<int>(call.n()), m = static_cast<int>(call.m()), d = static_cast<int>(call.d_k);
    const int group = call.heads / call.kv_heads;
    const RowKeyRanges ranges = row_key_ranges(call);
    const std::vector<int>& first = ranges.first;
    const std::vector<int>& end = ranges.end;
    auto half = [&](double x) { return round_to_half(static_cast<float>(x), call.half); };
    AttentionResult result;
    result.out = Matrix(static_cast<std::size_t>(n), static_cast<std::size_t>(call.heads * d));
    result.row_max = Matrix(static_cast<std::size_t>(call.heads), static_cast<std::size_t>(n));
    result.row_sum = Matrix(static_cast<std::size_t>(call.heads), static_cast<std::size_t>(n));
    const float scale = static_cast<float>(call.scale);
    std::vector<float> s(tile_keys), o(static_cast<std::size_t>(d));
    for (int h = 0; h < call.heads; ++h) {
        const int g = h / group;
        for (int row0 = 0; row0 < n; row0 += block_rows) {
            const int rows = std::min(block_rows, n - row0);
            const KeySpan span = block_keys(first.data(), end.data(), row0, rows, m);
            for (int r = 0; r < rows; ++r) {
                const int i = row0 + r;
                float m_i = -std::numeric_limits<float>::infinity(), l_i = 0.0f;
                std::fill(o.begin(), o.end(), 0.0f);
                for (int t = first_tile(span); t < end_tile(span); ++t) {
                    const int j0 = t * tile_keys;
                    float tile_max = -std::numeric_limits<float>::infinity();
                    for (int c = 0; c < tile_keys; ++c) {
                        const int j = j0 + c;
                        float z = 0.0f;
                        if (j < m)
                            for (int e = 0; e < d; ++e)
                                z += half((*call.q)(static_cast<std::size_t>(i), static_cast<std::size_t>(h * d + e))) *
                                     half((*call.k)(static_cast<std::size_t>(j), static_cast<std::size_t>(g * d + e)));
                        z *= scale;
                        if (j < first[static_cast<std::size_t>(i)] || j >= end[static_cast<std::size_t>(i)]) z = -std::numeric_limits<float>::infinity();
                        s[static_cast<std::size_t>(c)] = z;
                        tile_max = online_softmax::raised_max(tile_max, z);
                    }
                    const float m_new = online_softmax::raised_max(m_i, tile_max);
                    const float rescale = online_softmax::rescale(m_i, m_new);
                    float sum = 0.0f;
                    for (float& e : o) e *= rescale;
                    for (int c = 0; c < tile_keys; ++c) {
                        const float p = online_softmax::weight(s[static_cast<std::size_t>(c)], m_new);
                        sum += p;
                        const float p_rounded = round_to_half(p, call.half);
                        if (p_rounded == 0.0f) continue;
                        for (int e = 0; e < d; ++e)
                            o[static_cast<std::size_t>(e)] += p_rounded * half((*call.v)(static_cast<std::size_t>(j0 + c), static_cast<std::size_t>(g * d + e)));
                    }
                    l_i = online_softmax::rescaled_sum(l_i, rescale, sum);
                    m_i = m_new;
                }
                const double empty = call.empty_rows_nan ? std::numeric_limits<double>::quiet_NaN() : 0.0;
                for (int e = 0; e < d; ++e)
                    result.out(static_cast<std::size_t>(i), static_cast<std::size_t>(h * d + e)) = l_i > 0.0f ? o[static_cast<std::size_t>(e)] / l_i : empty;
                result.row_max(static_cast<std::size_t>(h), static_cast<std::size_t>(i)) = m_i;
                result.row_sum(static_cast<std::size_t>(h), static_cast<std::size_t>(i)) = l_i;
            }
        }
    }
    result.stats.block_q = block_rows;
    result.stats.block_k = tile_keys;
    result.stats.workers = 1;
    return result;
}

}  // namespace attn_trace
