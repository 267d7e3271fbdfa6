// The fused, tiled attention kernel of the fast path (SPEC §7 without the
// printing, §12). Paper symbols (FlashAttention): Br query rows per block, Bc keys
// per tile; per row the running max m, the running sum ℓ and the running
// weighted sum u (here U, Br × d_v).
//
// Per (head h, query block Q_b):                                  shapes
//   m = −∞, ℓ = 0, U = 0                                          (Br), (Br), (Br, d_v)
//   for each key tile K_t, V_t that some row of the block may read:
//     S = s·Q_b K_tᵀ (+ softcap) + M_bt                           (Br, Bc)
//     m' = max(m, rowmax S);  P = e^(S − m');  r = e^(m − m')     (Br, Bc), (Br)
//     ℓ = r·ℓ + rowsum P;  U = r·U + P V_t;  m = m'               (Br), (Br, d_v)
//   O_b = U / ℓ                                                   (Br, d_v)
#include "attn_trace/fast_attention.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <thread>

#include "blas_library.hpp"
#include "softmax_row_kernels.hpp"

namespace attn_trace {

namespace {

template <typename T>
constexpr T minus_infinity = -std::numeric_limits<T>::infinity();

// C (rows, cols) = alpha · A (rows, inner) · op(B) + beta · C, row-major, where
// op(B) = Bᵀ with B stored (cols, inner) when transpose_b, else B (inner, cols).
void gemm(bool transpose_b, std::size_t rows, std::size_t cols, std::size_t inner, float alpha, const float* a, std::size_t lda,
          const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
    blas_library().sgemm(CblasRowMajor, CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans, static_cast<int>(rows), static_cast<int>(cols),
                         static_cast<int>(inner), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}
void gemm(bool transpose_b, std::size_t rows, std::size_t cols, std::size_t inner, double alpha, const double* a, std::size_t lda,
          const double* b, std::size_t ldb, double beta, double* c, std::size_t ldc) {
    blas_library().dgemm(CblasRowMajor, CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans, static_cast<int>(rows), static_cast<int>(cols),
                         static_cast<int>(inner), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

// Runs work(item, worker) for item = 0 … count−1 on `threads` workers (this
// thread is worker 0); items go to whichever worker is free next.
void parallel_for(std::size_t count, int threads, const std::function<void(std::size_t, int)>& work) {
    std::atomic<std::size_t> next{0};
    auto worker = [&](int id) {
        for (std::size_t item = next++; item < count; item = next++) work(item, id);
    };
    std::vector<std::jthread> helpers;
    for (int id = 1; id < threads; ++id) helpers.emplace_back(worker, id);
    worker(0);
}

// The keys [first, end) of query `row` (all keys without row ranges).
struct KeyRange {
    std::size_t first, end;
};
KeyRange key_range(const FastMask* mask, std::size_t row, std::size_t m) {
    if (mask == nullptr || mask->first_key.empty()) return {0, m};
    return {mask->first_key[row], mask->end_key[row]};
}

// The per-worker scratch of one block: Br·Bc scores and Br rows of m, ℓ, U.
template <typename T>
struct BlockScratch {
    std::vector<T> scores, u, running_max, running_sum;
    BlockScratch(std::size_t block_q, std::size_t block_k, std::size_t d_v)
        : scores(block_q * block_k), u(block_q * d_v), running_max(block_q), running_sum(block_q) {}
};

template <typename T>
class BlockWorker {
public:
    BlockWorker(const FastAttentionInput<T>& in, const FastAttentionOutput<T>& out, const FastAttentionSettings& settings)
        : in_(in), out_(out), block_q_(settings.block_q), block_k_(settings.block_k) {}

    // One query block [i0, i0 + rows) of head h, with its tile counts added to `stats`.
    void run(int h, std::size_t i0, std::size_t rows, BlockScratch<T>& scratch, FastAttentionStats& stats) const {
        const int g = h / (in_.heads / in_.kv_heads);  // the KV head this query head reads
        const std::size_t hq = static_cast<std::size_t>(h), gk = static_cast<std::size_t>(g);
        const T* q_block = in_.q + i0 * in_.q_stride + hq * in_.d_k;  // (rows, d_k)
        const T* k_head = in_.k + gk * in_.d_k;                        // (m, d_k), row stride k_stride
        const T* v_head = in_.v + gk * in_.d_v;                        // (m, d_v), row stride v_stride
        T* const s = scratch.scores.data();
        T* const u = scratch.u.data();
        T* const m = scratch.running_max.data();
        T* const l = scratch.running_sum.data();
        std::fill(m, m + rows, minus_infinity<T>);
        std::fill(l, l + rows, T(0));
        std::fill(u, u + rows * in_.d_v, T(0));

        // The keys some row of the block reads (union) and those every row reads (intersection).
        std::size_t union_first = in_.m, union_end = 0, common_first = 0, common_end = in_.m;
        for (std::size_t r = 0; r < rows; ++r) {
            const KeyRange range = key_range(in_.mask, i0 + r, in_.m);
            union_first = std::min(union_first, range.first);
            union_end = std::max(union_end, range.end);
            common_first = std::max(common_first, range.first);
            common_end = std::min(common_end, range.end);
        }
        const bool elementwise = in_.mask != nullptr && in_.mask->has_elementwise();
        const std::size_t tiles = (in_.m + block_k_ - 1) / block_k_;
        std::size_t computed = 0;
        for (std::size_t j0 = union_first / block_k_ * block_k_; j0 < union_end; j0 += block_k_, ++computed) {
            const std::size_t cols = std::min(block_k_, in_.m - j0);
            // S = s · Q_b K_tᵀ   (rows, cols), leading dimension Bc
            gemm(true, rows, cols, in_.d_k, static_cast<T>(in_.scale), q_block, in_.q_stride, k_head + j0 * in_.k_stride, in_.k_stride,
                 T(0), s, block_k_);
            if (in_.softcap) soft_cap(s, rows, cols);
            if (elementwise || j0 < common_first || j0 + cols > common_end) add_mask(s, h, i0, rows, j0, cols);
            for (std::size_t r = 0; r < rows; ++r) {
                T* z = s + r * block_k_;
                // m' = max(m, max_j z_j)
                const T m_new = std::max(m[r], softmax_rows::row_maximum(z, cols));
                if (m_new == minus_infinity<T>) {  // no visible key yet: this tile adds nothing
                    std::fill(z, z + cols, T(0));
                    continue;
                }
                // r = e^(m − m');  ℓ = r·ℓ + Σ_j e^(z_j − m');  U_row = r·U_row
                const T rescale = std::exp(m[r] - m_new);
                l[r] = rescale * l[r] + softmax_rows::exp_shifted_and_sum(z, cols, m_new);
                if (rescale != T(1))
                    for (std::size_t c = 0; c < in_.d_v; ++c) u[r * in_.d_v + c] *= rescale;
                m[r] = m_new;
            }
            // U += P V_t   (rows, d_v)
            gemm(false, rows, in_.d_v, cols, T(1), s, block_k_, v_head + j0 * in_.v_stride, in_.v_stride, T(1), u, in_.d_v);
        }
        stats.tiles_computed += computed;
        stats.tiles_skipped += tiles - computed;
        write_rows(h, i0, rows, scratch);
    }

private:
    // z = c·tanh(z / c), before the mask (SPEC §3: after it, tanh(−∞)·c = −c would unmask).
    void soft_cap(T* s, std::size_t rows, std::size_t cols) const {
        const T c = static_cast<T>(*in_.softcap);
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t j = 0; j < cols; ++j) s[r * block_k_ + j] = c * std::tanh(s[r * block_k_ + j] / c);
    }

    // z_ij ← z_ij + M_ij: −∞ outside the row's key range or for an invalid key,
    // else the ALiBi and dense biases (summed in double, as the reference's M).
    void add_mask(T* s, int h, std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols) const {
        const FastMask* mask = in_.mask;
        const double slope = mask && !mask->alibi_slopes.empty() ? mask->alibi_slopes[static_cast<std::size_t>(h)] : 0.0;
        const long offset = static_cast<long>(in_.m) - static_cast<long>(in_.n);
        for (std::size_t r = 0; r < rows; ++r) {
            const std::size_t i = i0 + r;
            const KeyRange range = key_range(mask, i, in_.m);
            T* z = s + r * block_k_;
            for (std::size_t c = 0; c < cols; ++c) {
                const std::size_t j = j0 + c;
                if (j < range.first || j >= range.end || (!mask->key_valid.empty() && !mask->key_valid[j])) {
                    z[c] = minus_infinity<T>;
                    continue;
                }
                double bias = 0.0;
                if (slope != 0.0) bias -= slope * std::fabs(static_cast<double>(static_cast<long>(i) + offset - static_cast<long>(j)));
                if (!mask->dense.empty()) bias += mask->dense(i, j);
                if (bias != 0.0) z[c] = static_cast<T>(static_cast<double>(z[c]) + bias);
            }
        }
    }

    // O_b = U / ℓ, and the final m and ℓ of each row.
    void write_rows(int h, std::size_t i0, std::size_t rows, const BlockScratch<T>& scratch) const {
        const std::size_t hq = static_cast<std::size_t>(h);
        for (std::size_t r = 0; r < rows; ++r) {
            const T m = scratch.running_max[r], l = scratch.running_sum[r];
            T* o = out_.out + (i0 + r) * (static_cast<std::size_t>(in_.heads) * in_.d_v) + hq * in_.d_v;
            for (std::size_t c = 0; c < in_.d_v; ++c) o[c] = m == minus_infinity<T> ? out_.empty_row_value : scratch.u[r * in_.d_v + c] / l;
            if (out_.row_max) out_.row_max[hq * in_.n + i0 + r] = m;
            if (out_.row_sum) out_.row_sum[hq * in_.n + i0 + r] = l;
        }
    }

    const FastAttentionInput<T>& in_;
    const FastAttentionOutput<T>& out_;
    std::size_t block_q_, block_k_;
};

}  // namespace

template <typename T>
FastAttentionStats fast_attention(const FastAttentionInput<T>& input, const FastAttentionOutput<T>& output,
                                  const FastAttentionSettings& settings) {
    (void)blas_library();  // opened here, before the workers start, so a missing library is one clean error
    const std::size_t block_q = std::max<std::size_t>(1, std::min(settings.block_q, input.n));
    const std::size_t block_k = std::max<std::size_t>(1, std::min(settings.block_k, input.m));
    const std::size_t blocks = (input.n + block_q - 1) / block_q;
    const std::size_t items = blocks * static_cast<std::size_t>(input.heads);
    const int workers = static_cast<int>(std::clamp<std::size_t>(items, 1, static_cast<std::size_t>(std::max(1, settings.threads))));

    FastAttentionSettings used = settings;
    used.block_q = block_q;
    used.block_k = block_k;
    const BlockWorker<T> worker(input, output, used);
    std::vector<BlockScratch<T>> scratch(static_cast<std::size_t>(workers), BlockScratch<T>(block_q, block_k, input.d_v));
    std::vector<FastAttentionStats> stats(static_cast<std::size_t>(workers));
    // Last blocks first: under a causal mask they read the most tiles, and
    // starting with the longest items keeps the workers' finishing times close.
    parallel_for(items, workers, [&](std::size_t item, int id) {
        const int h = static_cast<int>(item / blocks);
        const std::size_t b = blocks - 1 - item % blocks;
        const std::size_t i0 = b * block_q;
        worker.run(h, i0, std::min(block_q, input.n - i0), scratch[static_cast<std::size_t>(id)], stats[static_cast<std::size_t>(id)]);
    });

    FastAttentionStats total;
    for (const auto& s : stats) {
        total.tiles_computed += s.tiles_computed;
        total.tiles_skipped += s.tiles_skipped;
    }
    total.score_bytes_held = static_cast<std::size_t>(workers) * block_q * block_k * sizeof(T);
    total.workers = workers;
    return total;
}

template FastAttentionStats fast_attention<float>(const FastAttentionInput<float>&, const FastAttentionOutput<float>&,
                                                  const FastAttentionSettings&);
template FastAttentionStats fast_attention<double>(const FastAttentionInput<double>&, const FastAttentionOutput<double>&,
                                                   const FastAttentionSettings&);

}  // namespace attn_trace
