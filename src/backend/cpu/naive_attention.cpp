#include "naive_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "blas_library.hpp"
#include "attn_trace/parallel.hpp"

namespace attn_trace {

namespace {

// Rows [i0, i0 + rows) of every head, with their (rows, m) scores in `scores`.
template <typename T>
void attend_rows(const FastAttentionInput<T>& in, const FastAttentionOutput<T>& out, std::size_t i0, std::size_t rows, std::vector<T>& scores) {
    const std::size_t m = in.m, width = static_cast<std::size_t>(in.heads) * in.d_v;
    const KeyMask* mask = in.mask;
    for (std::size_t h = 0; h < static_cast<std::size_t>(in.heads); ++h) {
        const std::size_t g = h / static_cast<std::size_t>(in.heads / in.kv_heads);
        blas_gemm(true, rows, m, in.d_k, static_cast<T>(in.scale), in.q + i0 * in.q_stride + h * in.d_k, in.q_stride, in.k + g * in.d_k, in.k_stride,
             scores.data(), m);
        for (std::size_t r = 0; r < rows; ++r) {
            T* z = scores.data() + r * m;
            if (mask && !mask->first_key.empty()) {
                std::fill(z, z + mask->first_key[i0 + r], -std::numeric_limits<T>::infinity());
                std::fill(z + mask->end_key[i0 + r], z + m, -std::numeric_limits<T>::infinity());
            }
            if (mask && !mask->key_valid.empty())
                for (std::size_t j = 0; j < m; ++j)
                    if (!mask->key_valid[j]) z[j] = -std::numeric_limits<T>::infinity();
            const T max = *std::max_element(z, z + m);
            T sum = 0;
            for (std::size_t j = 0; j < m; ++j) sum += z[j] = max == -std::numeric_limits<T>::infinity() ? T(0) : std::exp(z[j] - max);
            for (std::size_t j = 0; j < m; ++j) z[j] = sum > 0 ? z[j] / sum : out.empty_row_value;
        }
        blas_gemm(false, rows, in.d_v, m, T(1), scores.data(), m, in.v + g * in.d_v, in.v_stride, out.out + i0 * width + h * in.d_v, width);
    }
}

}  // namespace

template <typename T>
AttentionStats naive_attention(const FastAttentionInput<T>& input, const FastAttentionOutput<T>& output, int threads) {
    if (input.softcap || (input.mask && (!input.mask->dense.empty() || !input.mask->alibi_slopes.empty() || !input.mask->patterns.empty())))
        throw std::invalid_argument("the naive baseline masks by key ranges and key_valid only");
    if (input.n == 0 || input.m == 0) throw std::invalid_argument("the naive baseline needs n ≥ 1 and m ≥ 1");
    require_blas();  // opened here, before the workers start, so a missing library is one clean error
    const std::size_t wanted = std::min<std::size_t>(static_cast<std::size_t>(std::max(1, threads)), input.n);
    const std::size_t block = (input.n + wanted - 1) / wanted;
    const std::size_t workers = (input.n + block - 1) / block;  // n = 5 on 4 threads: blocks of 2, so 3 workers
    std::vector<std::vector<T>> scores(workers);
    parallel_for(workers, static_cast<int>(workers), [&](std::size_t w, int) {
        const std::size_t i0 = w * block, rows = std::min(block, input.n - i0);
        scores[w].resize(rows * input.m);
        attend_rows(input, output, i0, rows, scores[w]);
    });
    AttentionStats stats;
    stats.score_bytes_held = input.n * input.m * sizeof(T);
    stats.workers = static_cast<int>(workers);
    stats.block_q = block;
    stats.block_k = input.m;
    return stats;
}

template AttentionStats naive_attention<float>(const FastAttentionInput<float>&, const FastAttentionOutput<float>&, int);
template AttentionStats naive_attention<double>(const FastAttentionInput<double>&, const FastAttentionOutput<double>&, int);

}  // namespace attn_trace
