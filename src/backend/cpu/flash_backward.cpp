// The fused backward of the fast path (docs/COMMANDS.md#grad, `grad --fast`): FlashAttention-2's
// backward pass. Paper symbols: Br query rows per block, Bc keys per tile; lse = m + ln ℓ
// per row from the forward, delta = rowsum(dO ⊙ O).
//
// Per (KV head g, key tile K_t, V_t), one worker:                       shapes
//   dK_t = 0, dV_t = 0                                                  (Bc, d_k), (Bc, d_v)
//   for each query head h reading g, each query block that reads tile t:
//     S = Q_b K_tᵀ;  P = exp(s·S − lse_b) (0 where masked)              (Br, Bc)
//     dV_t += Pᵀ dO_b                                                   (Bc, d_v)
//     dP = dO_b V_tᵀ;  dS = s·P ⊙ (dP − delta_b)                        (Br, Bc)
//     dK_t += dSᵀ Q_b;  dQ_b += dS K_t (the worker's own dQ buffer)     (Bc, d_k), (Br, d_k)
// and after each KV head the workers' dQ buffers are added up. So each tile is recomputed once, the five
// products are 5·Br·Bc·d multiply-adds (10·Br·Bc·d FLOPs) per tile, and no two workers write one value.
//
// The products are register-tiled like the forward's micro-kernels (MR rows by two
// vectors, panel_kernels-inl.hpp), but on row-major operands: B's rows are vectors
// and A is read one value at a time as a broadcast through two strides, so Pᵀ and dSᵀ
// are read in place, without a transpose. Every width is padded to whole vectors
// with zeros: K_t and V_t are packed transposed (d, Bc) for S and dP, and K_t as rows
// (Bc, d_k) for dQ; the queries and dO of every head are packed once, before any tile.
// Softmax in base 2 as in the forward (exp2_bounded): s·log₂e and lse·log₂e.
//
// Compiled once per target through Highway's foreach_target.h, like fast_attention.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/flash_backward.cpp"
#include <hwy/foreach_target.h>  // must come before highway.h

#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "attention_buffers-inl.hpp"
#include "attn_trace/parallel.hpp"
#include "flash_backward.hpp"
#include "kernel_target.hpp"
#include "panel_kernels-inl.hpp"

#ifndef ATTN_TRACE_FLASH_BACKWARD_SHARED_
#define ATTN_TRACE_FLASH_BACKWARD_SHARED_
namespace attn_trace {
// What the per-target part reads: the call, its forward's lse, and where to write.
template <typename T>
struct BackwardArguments {
    const FastAttentionInput<T, double>* input;
    const double* d_out;
    std::size_t d_out_stride;
    const FlashBackwardOutput<T>* output;  // out and lse already written
    FlashBackwardSettings settings;
};
}  // namespace attn_trace
#endif

HWY_BEFORE_NAMESPACE();
namespace attn_trace::HWY_NAMESPACE {

namespace {

using panel::Simd;

// C (M, N) [+]= A (M, K) · B (K, N): A(r, p) at a[r·ars + p·aks], B and C row-major.
// N is a whole number of vectors.
template <typename T, bool Accumulate, std::size_t Rows, std::size_t Vecs>
inline void product_tile(std::size_t depth, const T* __restrict a, std::size_t ars, std::size_t aks, const T* __restrict b, std::size_t ldb,
                         T* __restrict c, std::size_t ldc) {
    using S = Simd<T>;
    using Vec = typename S::Vec;
    constexpr std::size_t L = S::lanes;
    Vec acc[Rows][Vecs];
#pragma GCC unroll 8
    for (std::size_t r = 0; r < Rows; ++r)
        for (std::size_t v = 0; v < Vecs; ++v) acc[r][v] = Accumulate ? S::load(c + r * ldc + v * L) : Vec{};
    for (std::size_t p = 0; p < depth; ++p) {
        Vec bv[Vecs];
        for (std::size_t v = 0; v < Vecs; ++v) bv[v] = S::load(b + p * ldb + v * L);
#pragma GCC unroll 8
        for (std::size_t r = 0; r < Rows; ++r) {
            const Vec ar = S::splat(a[r * ars + p * aks]);
            for (std::size_t v = 0; v < Vecs; ++v) acc[r][v] += ar * bv[v];
        }
    }
#pragma GCC unroll 8
    for (std::size_t r = 0; r < Rows; ++r)
        for (std::size_t v = 0; v < Vecs; ++v) S::store(c + r * ldc + v * L, acc[r][v]);
}

template <typename T, bool Accumulate, std::size_t Vecs>
inline void product_rows(std::size_t rows, std::size_t depth, const T* a, std::size_t ars, std::size_t aks, const T* b, std::size_t ldb, T* c,
                         std::size_t ldc) {
    switch (rows) {
        case 1: return product_tile<T, Accumulate, 1, Vecs>(depth, a, ars, aks, b, ldb, c, ldc);
        case 2: return product_tile<T, Accumulate, 2, Vecs>(depth, a, ars, aks, b, ldb, c, ldc);
        case 3: return product_tile<T, Accumulate, 3, Vecs>(depth, a, ars, aks, b, ldb, c, ldc);
        case 4: return product_tile<T, Accumulate, 4, Vecs>(depth, a, ars, aks, b, ldb, c, ldc);
        case 5: return product_tile<T, Accumulate, 5, Vecs>(depth, a, ars, aks, b, ldb, c, ldc);
        case 6: return product_tile<T, Accumulate, std::min<std::size_t>(6, panel::MR), Vecs>(depth, a, ars, aks, b, ldb, c, ldc);
        case 7: return product_tile<T, Accumulate, std::min<std::size_t>(7, panel::MR), Vecs>(depth, a, ars, aks, b, ldb, c, ldc);
        default: return product_tile<T, Accumulate, panel::MR, Vecs>(depth, a, ars, aks, b, ldb, c, ldc);
    }
}

template <typename T, bool Accumulate>
void product(std::size_t rows, std::size_t cols, std::size_t depth, const T* a, std::size_t ars, std::size_t aks, const T* b, std::size_t ldb, T* c,
             std::size_t ldc) {
    constexpr std::size_t L = Simd<T>::lanes;
    for (std::size_t r = 0; r < rows; r += panel::MR) {
        const std::size_t count = std::min(panel::MR, rows - r);
        std::size_t col = 0;
        for (; col + 2 * L <= cols; col += 2 * L)
            product_rows<T, Accumulate, 2>(count, depth, a + r * ars, ars, aks, b + col, ldb, c + r * ldc + col, ldc);
        if (col < cols) product_rows<T, Accumulate, 1>(count, depth, a + r * ars, ars, aks, b + col, ldb, c + r * ldc + col, ldc);
    }
}

template <typename T>
class BackwardKernel {
    using S = Simd<T>;
    using Vec = typename S::Vec;
    static constexpr std::size_t L = S::lanes;

public:
    explicit BackwardKernel(const BackwardArguments<T>& args)
        : in_(*args.input), out_(*args.output), d_out_(args.d_out), d_out_stride_(args.d_out_stride),
          heads_(static_cast<std::size_t>(in_.heads)), group_(heads_ / static_cast<std::size_t>(in_.kv_heads)),
          block_q_(std::max<std::size_t>(1, std::min(args.settings.block_q, in_.n))),
          block_k_(std::max<std::size_t>(1, std::min(args.settings.block_k, in_.m))),
          dk_(round_up(in_.d_k, L)), dv_(round_up(in_.d_v, L)), bc_(round_up(block_k_, L)),
          tiles_((in_.m + block_k_ - 1) / block_k_), blocks_((in_.n + block_q_ - 1) / block_q_),
          queries_(heads_ * in_.n * dk_), d_outs_(heads_ * in_.n * dv_), lse2_(heads_ * in_.n), block_keys_(blocks_) {
        workers_ = static_cast<int>(std::clamp<std::size_t>(tiles_, 1, static_cast<std::size_t>(std::max(1, args.settings.threads))));
    }

    AttentionStats run() {
        parallel_for(blocks_ * heads_, workers_, [&](std::size_t item, int) { pack_rows(item / blocks_, item % blocks_); });
        std::vector<Scratch> scratch;
        for (int w = 0; w < workers_; ++w) scratch.emplace_back(*this);
        std::vector<AttentionStats> stats(static_cast<std::size_t>(workers_));
        // One KV head at a time, so that a worker's dQ covers only the query heads of one
        // group (at n = 65 536, d_k = 64: 16 MiB per query head and worker). Tile 0 first:
        // under a causal mask the first tiles are read by the most blocks.
        for (std::size_t g = 0; g < static_cast<std::size_t>(in_.kv_heads); ++g) {
            for (Scratch& s : scratch) std::fill_n(s.grad_q.data(), s.grad_q.size(), T(0));
            parallel_for(tiles_, workers_,
                         [&](std::size_t t, int id) { key_tile(g, t, scratch[static_cast<std::size_t>(id)], stats[static_cast<std::size_t>(id)]); });
            parallel_for(blocks_, workers_, [&](std::size_t b, int) { sum_grad_q(g, b, scratch); });
        }
        AttentionStats total;
        for (const auto& s : stats) {
            total.tiles_computed += s.tiles_computed;
            total.tiles_skipped += s.tiles_skipped;
        }
        total.score_bytes_held = static_cast<std::size_t>(workers_) * 2 * block_q_ * bc_ * sizeof(T);  // P and dS
        total.workers = workers_;
        total.block_q = block_q_;
        total.block_k = block_k_;
        return total;
    }

private:
    // One worker's buffers: the packed tile, its dK and dV sums, one tile's P and dP (then
    // dS), and its own dQ for every row of the query heads of one KV head.
    struct Scratch {
        panel::AlignedArray<T> keys_t, values_t, keys, grad_k, grad_v, p, dp, grad_q;
        explicit Scratch(const BackwardKernel& k)
            : keys_t(k.dk_ * k.bc_), values_t(k.dv_ * k.bc_), keys(k.bc_ * k.dk_), grad_k(k.bc_ * k.dk_), grad_v(k.bc_ * k.dv_),
              p(k.block_q_ * k.bc_), dp(k.block_q_ * k.bc_), grad_q(k.group_ * k.in_.n * k.dk_) {}
    };

    // Query block b of head h: its queries and dO rows packed (zero past d), lse in
    // base 2, delta = rowsum(dO ⊙ O); and (once per block) the keys some row reads.
    void pack_rows(std::size_t h, std::size_t b) {
        const std::size_t i0 = b * block_q_, rows = std::min(block_q_, in_.n - i0);
        for (std::size_t i = i0; i < i0 + rows; ++i) {
            T* q = queries_.data() + (h * in_.n + i) * dk_;
            T* d = d_outs_.data() + (h * in_.n + i) * dv_;
            const double* q_in = in_.q + i * in_.q_stride + h * in_.d_k;
            const double* d_in = d_out_ + i * d_out_stride_ + h * in_.d_v;
            const T* o = out_.out + i * heads_ * in_.d_v + h * in_.d_v;
            T delta = 0;
            for (std::size_t c = 0; c < dk_; ++c) q[c] = c < in_.d_k ? static_cast<T>(q_in[c]) : T(0);
            for (std::size_t c = 0; c < dv_; ++c) d[c] = c < in_.d_v ? static_cast<T>(d_in[c]) : T(0);
            for (std::size_t c = 0; c < in_.d_v; ++c) delta += d[c] * o[c];
            out_.delta[h * in_.n + i] = delta;
            const T lse = out_.lse[h * in_.n + i];
            lse2_[h * in_.n + i] = std::isinf(lse) ? lse : lse * static_cast<T>(log2_e);
        }
        if (h == 0) block_keys_[b] = rows_keys(i0, rows);
    }

    struct Keys {
        std::size_t first, end;
    };
    Keys row_keys(std::size_t i) const {
        if (in_.mask == nullptr || in_.mask->first_key.empty()) return {0, in_.m};
        return {in_.mask->first_key[i], in_.mask->end_key[i]};
    }
    Keys rows_keys(std::size_t i0, std::size_t rows) const {
        Keys any{in_.m, 0};
        for (std::size_t i = i0; i < i0 + rows; ++i) {
            const Keys row = row_keys(i);
            if (row.first >= row.end) continue;
            any = {std::min(any.first, row.first), std::max(any.end, row.end)};
        }
        return any;
    }

    // Key tile t of KV head g against every query block of its query heads that reads it.
    void key_tile(std::size_t g, std::size_t t, Scratch& s, AttentionStats& stats) const {
        const std::size_t j0 = t * block_k_, cols = std::min(block_k_, in_.m - j0);
        pack_tile(g, j0, cols, s);
        std::fill_n(s.grad_k.data(), s.grad_k.size(), T(0));
        std::fill_n(s.grad_v.data(), s.grad_v.size(), T(0));
        for (std::size_t h = g * group_; h < (g + 1) * group_; ++h)
            for (std::size_t b = 0; b < blocks_; ++b) {
                const Keys keys = block_keys_[b];
                if (keys.first >= keys.end || keys.first >= j0 + cols || keys.end <= j0) {  // no row of the block reads the tile
                    ++stats.tiles_skipped;
                    continue;
                }
                ++stats.tiles_computed;
                tile(h, b * block_q_, std::min(block_q_, in_.n - b * block_q_), j0, cols, s);
            }
        const std::size_t kv_dk = static_cast<std::size_t>(in_.kv_heads) * in_.d_k, kv_dv = static_cast<std::size_t>(in_.kv_heads) * in_.d_v;
        for (std::size_t r = 0; r < cols; ++r) {
            std::copy_n(s.grad_k.data() + r * dk_, in_.d_k, out_.grad_k + (j0 + r) * kv_dk + g * in_.d_k);
            std::copy_n(s.grad_v.data() + r * dv_, in_.d_v, out_.grad_v + (j0 + r) * kv_dv + g * in_.d_v);
        }
    }

    // K_t as rows (Bc, d_k) and transposed (d_k, Bc), V_t transposed (d_v, Bc), zero past the ends.
    void pack_tile(std::size_t g, std::size_t j0, std::size_t cols, Scratch& s) const {
        std::fill_n(s.keys_t.data(), s.keys_t.size(), T(0));
        std::fill_n(s.values_t.data(), s.values_t.size(), T(0));
        std::fill_n(s.keys.data(), s.keys.size(), T(0));
        for (std::size_t r = 0; r < cols; ++r) {
            const double* k = in_.k + (j0 + r) * in_.k_stride + g * in_.d_k;
            const double* v = in_.v + (j0 + r) * in_.v_stride + g * in_.d_v;
            for (std::size_t c = 0; c < in_.d_k; ++c) s.keys.data()[r * dk_ + c] = s.keys_t.data()[c * bc_ + r] = static_cast<T>(k[c]);
            for (std::size_t c = 0; c < in_.d_v; ++c) s.values_t.data()[c * bc_ + r] = static_cast<T>(v[c]);
        }
    }

    // One (Br, Bc) tile: the five products and the softmax backward between them.
    void tile(std::size_t h, std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols, Scratch& s) const {
        const T* q = queries_.data() + (h * in_.n + i0) * dk_;
        const T* d_o = d_outs_.data() + (h * in_.n + i0) * dv_;
        T* p = s.p.data();
        T* ds = s.dp.data();
        product<T, false>(rows, bc_, dk_, q, dk_, 1, s.keys_t.data(), bc_, p, bc_);  // S = Q_b K_tᵀ
        weights(h, i0, rows, j0, cols, p);
        product<T, true>(cols, dv_, rows, p, 1, bc_, d_o, dv_, s.grad_v.data(), dv_);   // dV_t += Pᵀ dO_b
        product<T, false>(rows, bc_, dv_, d_o, dv_, 1, s.values_t.data(), bc_, ds, bc_);  // dP = dO_b V_tᵀ
        const Vec scale = S::splat(static_cast<T>(in_.scale));
        for (std::size_t r = 0; r < rows; ++r) {
            const Vec delta = S::splat(out_.delta[h * in_.n + i0 + r]);
            for (std::size_t c = 0; c < bc_; c += L)
                S::store(ds + r * bc_ + c, scale * S::load(p + r * bc_ + c) * (S::load(ds + r * bc_ + c) - delta));  // dS
        }
        product<T, true>(cols, dk_, rows, ds, 1, bc_, q, dk_, s.grad_k.data(), dk_);  // dK_t += dSᵀ Q_b
        product<T, true>(rows, dk_, cols, ds, bc_, 1, s.keys.data(), dk_, s.grad_q.data() + ((h % group_) * in_.n + i0) * dk_, dk_);  // dQ_b += dS K_t
    }

    // S → P = exp(s·S − lse) in place, in base 2; 0 where the row may not read the key
    // and past the tile's last key.
    void weights(std::size_t h, std::size_t i0, std::size_t rows, std::size_t j0, std::size_t cols, T* p) const {
        const Vec scale2 = S::splat(static_cast<T>(in_.scale * log2_e));
        for (std::size_t r = 0; r < rows; ++r) {
            T* row = p + r * bc_;
            const T lse2 = lse2_[h * in_.n + i0 + r];
            const Keys keys = row_keys(i0 + r);
            const std::size_t first = std::clamp(keys.first, j0, j0 + cols) - j0, end = std::clamp(keys.end, j0, j0 + cols) - j0;
            if (std::isinf(lse2) || first >= end) {
                std::fill_n(row, bc_, T(0));
                continue;
            }
            const Vec shift = S::splat(lse2);
            for (std::size_t c = 0; c < bc_; c += L) S::store(row + c, panel::exp2_bounded(S::load(row + c) * scale2 - shift));
            std::fill_n(row, first, T(0));
            std::fill(row + end, row + bc_, T(0));
        }
    }

    // grad_q of query block b, the query heads of KV head g: the workers' dQ added up.
    void sum_grad_q(std::size_t g, std::size_t b, const std::vector<Scratch>& scratch) const {
        const std::size_t i0 = b * block_q_, rows = std::min(block_q_, in_.n - i0);
        for (std::size_t k = 0; k < group_; ++k)
            for (std::size_t i = i0; i < i0 + rows; ++i) {
                T* into = out_.grad_q + i * heads_ * in_.d_k + (g * group_ + k) * in_.d_k;
                for (std::size_t c = 0; c < in_.d_k; ++c) {
                    T sum = 0;
                    for (const Scratch& s : scratch) sum += s.grad_q.data()[(k * in_.n + i) * dk_ + c];
                    into[c] = sum;
                }
            }
    }

    const FastAttentionInput<T, double>& in_;
    const FlashBackwardOutput<T>& out_;
    const double* d_out_;
    std::size_t d_out_stride_, heads_, group_, block_q_, block_k_, dk_, dv_, bc_, tiles_, blocks_;
    int workers_ = 1;
    panel::AlignedArray<T> queries_, d_outs_;
    std::vector<T> lse2_;
    std::vector<Keys> block_keys_;
};

}  // namespace

AttentionStats flash_backward_f32(const BackwardArguments<float>& args) { return BackwardKernel<float>(args).run(); }
AttentionStats flash_backward_f64(const BackwardArguments<double>& args) { return BackwardKernel<double>(args).run(); }

}  // namespace attn_trace::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attn_trace {

HWY_EXPORT(flash_backward_f32);
HWY_EXPORT(flash_backward_f64);

namespace {

// The forward (the fast kernel, keeping m and ℓ), lse = m + ln ℓ, then the backward.
template <typename T, typename Dispatch>
AttentionStats backward(const FastAttentionInput<T, double>& input, const double* d_out, std::size_t d_out_stride, const FlashBackwardOutput<T>& output,
                        const FlashBackwardSettings& settings, Dispatch dispatch) {
    settle_kernel_target();  // ATTN_TRACE_KERNEL applies to the backward whatever ran before it
    const std::size_t rows = input.n * static_cast<std::size_t>(input.heads);
    std::vector<T> row_max(rows), row_sum(rows);
    FastAttentionSettings forward;
    forward.threads = settings.threads;
    fast_attention(input, FastAttentionOutput<T>{output.out, row_max.data(), row_sum.data(), T(0)}, forward);
    for (std::size_t i = 0; i < rows; ++i) output.lse[i] = std::isinf(row_max[i]) ? row_max[i] : row_max[i] + std::log(row_sum[i]);
    return dispatch(BackwardArguments<T>{&input, d_out, d_out_stride, &output, settings});
}

}  // namespace

AttentionStats flash_backward(const FastAttentionInput<float, double>& input, const double* d_out, std::size_t d_out_stride,
                              const FlashBackwardOutput<float>& output, const FlashBackwardSettings& settings) {
    return backward(input, d_out, d_out_stride, output, settings,
                    [](const BackwardArguments<float>& args) { return HWY_DYNAMIC_DISPATCH(flash_backward_f32)(args); });
}
AttentionStats flash_backward(const FastAttentionInput<double>& input, const double* d_out, std::size_t d_out_stride,
                              const FlashBackwardOutput<double>& output, const FlashBackwardSettings& settings) {
    return backward(input, d_out, d_out_stride, output, settings,
                    [](const BackwardArguments<double>& args) { return HWY_DYNAMIC_DISPATCH(flash_backward_f64)(args); });
}

}  // namespace attn_trace
#endif  // HWY_ONCE
