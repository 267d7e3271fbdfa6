// The decode kernel (decode_attention.hpp; docs/PERFORMANCE.md#decode-one-query-over-a-kv-cache).
//
// Per chunk of the cache (keys [t0, t1)), for every query head h:     shapes
//   m = −∞, ℓ = 0, u = 0                                              (1), (1), (d_v)
//   for each block of keys K_b, V_b in the chunk, for each KV head g:
//     s = s·q_h K_gbᵀ for the G query heads of g                      (G, B)
//     m' = max(m, max s);  p = e^(s − m');  r = e^(m − m')             (G, B)
//     ℓ = r·ℓ + Σ p;  u = r·u + p V_gb;  m = m'                        (G, d_v)
// then, per query head, over the chunks c:  M = max m_c,
//   out = Σ_c e^(m_c − M) u_c / Σ_c e^(m_c − M) ℓ_c.
//
// Why chunks hold every KV head, and a block is walked row by row: the cache is (T, H_kv·d)
// token by token, so one KV head's keys lie d floats out of every H_kv·d (512 bytes of
// each 4 KiB at H_kv = 8, d = 128: a page each). Read head by head, the first version
// moved 2.7 GB/s where a copy moved 14.7 (T = 32768, 32 over 8 heads, 2 threads, Zen 4):
// each 512-byte piece was a new page to the prefetchers. Row by row, every head of the
// row in turn, a worker reads its chunk front to back as one stream, and the hardware
// prefetchers keep up: software prefetches a few rows or a block ahead measured slower
// (T = 4096 and 32768, one thread). Each key row is read from memory once,
// and its G query heads are scored against it while it is in L1 (four keys at a time
// with AVX-512 in float32, one transposing lane reduction for four dot products; AVX2's
// 16 registers hold two keys' accumulators for four queries, one reduction a pair;
// docs/PERFORMANCE.md#decode-one-query-over-a-kv-cache). Like the fast path it
// works in base 2 (the queries are scaled by s·log₂e) with panel::exp2_bounded.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/decode_attention.cpp"
#include <hwy/foreach_target.h>  // must come before highway.h

#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "attn_trace/parallel.hpp"
#include "decode_attention.hpp"
#include "kernel_target.hpp"
#include "panel_kernels-inl.hpp"

HWY_BEFORE_NAMESPACE();
namespace attn_trace::HWY_NAMESPACE {

namespace {

using panel::AlignedArray;
using panel::Simd;

// Keys per block: their scores for every query head (H × 32) and the block's K and V
// rows (32 × 4 KiB each at H_kv·d = 1024) stay in L1 and L2 between the products.
constexpr std::size_t block_keys = 32;
// Query heads that share each loaded key or value vector in registers.
constexpr std::size_t query_group = 4;
// Value rows weighed into u per pass: each u vector is loaded and stored once a pass, and
// the pass reads four rows side by side (two a pass left the loop waiting on the loads of
// V more often; eight spill AVX2's registers; docs/PERFORMANCE.md#decode-one-query-over-a-kv-cache).
constexpr std::size_t value_keys = 4;

std::size_t round_up(std::size_t x, std::size_t step) { return (x + step - 1) / step * step; }

// The sum of a vector's lanes, once per query and key. GCC's vector extensions have no
// such operation, and splitting the vector by hand went through the stack (a 64-byte
// store read back in halves), so AVX-512 and AVX2 use their own instructions.
// By the register's width, which Highway states for every target (HWY_MAX_BYTES): every
// AVX-512 target has 64-byte registers and these instructions, AVX2 32-byte ones.
static_assert(sizeof(Simd<float>::Vec) == panel::vector_bytes, "the decode kernel's vectors are the target's registers");
#if HWY_ARCH_X86 && HWY_MAX_BYTES == 64
inline float sum_lanes(Simd<float>::Vec v) { return _mm512_reduce_add_ps(v); }
inline double sum_lanes(Simd<double>::Vec v) { return _mm512_reduce_add_pd(v); }
#elif HWY_ARCH_X86 && HWY_MAX_BYTES == 32
inline float sum_lanes(Simd<float>::Vec v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
}
inline double sum_lanes(Simd<double>::Vec v) {
    const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}
#else
template <typename Vec>
auto sum_lanes(Vec v) {
    auto total = v[0];
    for (std::size_t i = 1; i < sizeof v / sizeof v[0]; ++i) total += v[i];
    return total;
}
#endif

template <typename T>
T max_lanes(typename Simd<T>::Vec v) {
    T lanes[Simd<T>::lanes];
    std::memcpy(lanes, &v, sizeof v);
    T best = lanes[0];
    for (std::size_t i = 1; i < Simd<T>::lanes; ++i) best = std::max(best, lanes[i]);
    return best;
}

// One chunk's running state, every query head: m (base 2), ℓ, u; each chunk's ends up in `Partials`.
// u on 64-byte boundaries: its rows are updated a vector at a time for every key, and a
// store that straddles two cache lines costs two.
template <typename T>
struct Partials {
    std::vector<T> m, l;  // (chunks, H)
    AlignedArray<T> u;    // (chunks, H, d_v padded to whole vectors)
    Partials(std::size_t chunks, std::size_t heads, std::size_t dv_pad) : m(chunks * heads), l(chunks * heads), u(chunks * heads * dv_pad) {}
};

template <typename T>
class DecodeWorker {
    using S = Simd<T>;
    using Vec = typename S::Vec;
    static constexpr std::size_t L = S::lanes;

public:
    struct Scratch {
        AlignedArray<T> q, scores;  // (H, d_k padded) scaled queries, (H, block_keys padded)
        explicit Scratch(std::size_t heads, std::size_t dk_pad) : q(heads * dk_pad), scores(heads * round_up(block_keys, L)) {}
    };

    DecodeWorker(const FastAttentionInput<T>& in, std::size_t chunk, Partials<T>& partials)
        : in_(in), chunk_(chunk), heads_(static_cast<std::size_t>(in.heads)), group_(heads_ / static_cast<std::size_t>(in.kv_heads)),
          dk_pad_(round_up(in.d_k, L)), dv_pad_(round_up(in.d_v, L)), out_(partials) {}

    std::size_t dv_pad() const { return dv_pad_; }
    std::size_t dk_pad() const { return dk_pad_; }

    void run(std::size_t c, Scratch& scratch) const {
        const T factor = static_cast<T>(in_.scale * 1.4426950408889634);  // s·log₂e
        for (std::size_t h = 0; h < heads_; ++h)
            for (std::size_t d = 0; d < dk_pad_; ++d) scratch.q.data()[h * dk_pad_ + d] = d < in_.d_k ? factor * in_.q[h * in_.d_k + d] : T(0);
        T* m = out_.m.data() + c * heads_;
        T* l = out_.l.data() + c * heads_;
        T* u = out_.u.data() + c * heads_ * dv_pad_;
        std::fill(m, m + heads_, -std::numeric_limits<T>::infinity());
        std::fill(l, l + heads_, T(0));
        std::fill(u, u + heads_ * dv_pad_, T(0));
        const std::size_t t1 = std::min(in_.m, (c + 1) * chunk_);
        const std::size_t stride = round_up(block_keys, L);
        for (std::size_t j0 = c * chunk_; j0 < t1; j0 += block_keys) {
            const std::size_t count = std::min(block_keys, t1 - j0);
            // Row by row, every KV head of the row in turn: memory is read front to back.
            std::size_t j = 0;
            for (; j + 4 <= count; j += 4) {
                const T* keys = in_.k + (j0 + j) * in_.k_stride;
                for_each_group([&](std::size_t g, std::size_t h, auto rows) {
                    score_four_keys<rows()>(scratch.q.data() + h * dk_pad_, keys + g * in_.d_k, scratch.scores.data() + h * stride + j, stride);
                });
            }
            for (; j < count; ++j) {
                const T* keys = in_.k + (j0 + j) * in_.k_stride;
                for_each_group([&](std::size_t g, std::size_t h, auto rows) {
                    score_key<rows()>(scratch.q.data() + h * dk_pad_, keys + g * in_.d_k, scratch.scores.data() + h * stride + j, stride);
                });
            }
            for (std::size_t h = 0; h < heads_; ++h) softmax_row(scratch.scores.data() + h * stride, count, m[h], l[h], u + h * dv_pad_);
            for (std::size_t j = 0; j < count; j += value_keys) {
                // value_keys rows a pass (the last one repeated, weighed 0, past the end).
                const std::size_t keys = std::min(value_keys, count - j);
                const T* values[value_keys];
                for (std::size_t k = 0; k < value_keys; ++k) values[k] = in_.v + (j0 + j + std::min(k, keys - 1)) * in_.v_stride;
                for_each_group([&](std::size_t g, std::size_t h, auto rows) {
                    weigh_values<rows()>(scratch.scores.data() + h * stride + j, keys, stride, values, g * in_.d_v, u + h * dv_pad_);
                });
            }
        }
    }

private:
    // work(g, h, rows) for each KV head g and each group of up to query_group of its query
    // heads h … h + rows − 1, rows as a compile-time constant (std::integral_constant).
    template <typename Work>
    void for_each_group(Work work) const {
        for (std::size_t g = 0; g < static_cast<std::size_t>(in_.kv_heads); ++g)
            for (std::size_t h = g * group_; h < (g + 1) * group_; h += query_group) {
                switch (std::min(query_group, (g + 1) * group_ - h)) {
                    case 1: work(g, h, std::integral_constant<std::size_t, 1>{}); break;
                    case 2: work(g, h, std::integral_constant<std::size_t, 2>{}); break;
                    case 3: work(g, h, std::integral_constant<std::size_t, 3>{}); break;
                    default: work(g, h, std::integral_constant<std::size_t, query_group>{}); break;
                }
            }
    }

    // R dot products with one key: the key is loaded once for all R queries.
    template <std::size_t R>
    void score_key(const T* q, const T* key, T* scores, std::size_t stride) const {
        Vec acc[R] = {};
        std::size_t d = 0;
        for (; d + L <= in_.d_k; d += L) {
            const Vec kv = S::load(key + d);
#pragma GCC unroll 4
            for (std::size_t r = 0; r < R; ++r) acc[r] += S::load(q + r * dk_pad_ + d) * kv;
        }
        for (std::size_t r = 0; r < R; ++r) {
            T sum = sum_lanes(acc[r]);
            for (std::size_t e = d; e < in_.d_k; ++e) sum += q[r * dk_pad_ + e] * key[e];
            scores[r * stride] = sum;
        }
    }

    // R queries against four consecutive keys (rows k_stride apart). On AVX-512 the 16
    // accumulators fit the 32 registers, and the four sums of a query come out of one
    // transposing reduction into one 4-float store; elsewhere it is four score_key calls.
    template <std::size_t R>
    void score_four_keys(const T* q, const T* key, T* scores, std::size_t stride) const {
#if HWY_ARCH_X86 && HWY_MAX_BYTES == 64
        if constexpr (std::is_same_v<T, float>) {
            if (in_.d_k % L == 0) {
                Vec acc[4][R] = {};
                for (std::size_t d = 0; d < in_.d_k; d += L) {
                    const Vec k0 = S::load(key + d), k1 = S::load(key + in_.k_stride + d), k2 = S::load(key + 2 * in_.k_stride + d),
                              k3 = S::load(key + 3 * in_.k_stride + d);
#pragma GCC unroll 4
                    for (std::size_t r = 0; r < R; ++r) {
                        const Vec qr = S::load(q + r * dk_pad_ + d);
                        acc[0][r] += qr * k0;
                        acc[1][r] += qr * k1;
                        acc[2][r] += qr * k2;
                        acc[3][r] += qr * k3;
                    }
                }
                for (std::size_t r = 0; r < R; ++r) _mm_storeu_ps(scores + r * stride, sum_four(acc[0][r], acc[1][r], acc[2][r], acc[3][r]));
                return;
            }
        }
#elif HWY_ARCH_X86 && HWY_MAX_BYTES == 32
        // AVX2's 16 registers hold two keys' accumulators for four queries (8), the two
        // key vectors and a query: two keys a pass, each query vector loaded once for both,
        // and a pair's two sums out of one reduction.
        if constexpr (std::is_same_v<T, float>) {
            if (in_.d_k % L == 0) {
                for (std::size_t k = 0; k < 4; k += 2) score_two_keys<R>(q, key + k * in_.k_stride, scores + k, stride);
                return;
            }
        }
#endif
        for (std::size_t k = 0; k < 4; ++k) score_key<R>(q, key + k * in_.k_stride, scores + k, stride);
    }

#if HWY_ARCH_X86 && HWY_MAX_BYTES == 32
    // R queries against two consecutive keys; d_k a whole number of vectors.
    template <std::size_t R>
    void score_two_keys(const T* q, const T* key, T* scores, std::size_t stride) const {
        Vec acc[2][R] = {};
        for (std::size_t d = 0; d < in_.d_k; d += L) {
            const Vec k0 = S::load(key + d), k1 = S::load(key + in_.k_stride + d);
#pragma GCC unroll 4
            for (std::size_t r = 0; r < R; ++r) {
                const Vec qr = S::load(q + r * dk_pad_ + d);
                acc[0][r] += qr * k0;
                acc[1][r] += qr * k1;
            }
        }
        for (std::size_t r = 0; r < R; ++r) _mm_storel_pi(reinterpret_cast<__m64*>(scores + r * stride), sum_two(acc[0][r], acc[1][r]));
    }

    // [Σ a, Σ b, Σ a, Σ b]: pairwise sums within the halves, the halves added, pairwise again.
    static __m128 sum_two(__m256 a, __m256 b) {
        const __m256 pairs = _mm256_hadd_ps(a, b);
        const __m128 halves = _mm_add_ps(_mm256_castps256_ps128(pairs), _mm256_extractf128_ps(pairs, 1));
        return _mm_hadd_ps(halves, halves);
    }
#endif

#if HWY_ARCH_X86 && HWY_MAX_BYTES == 64
    // [Σ a, Σ b, Σ c, Σ d]: each halved to 4 lanes, then two rounds of pairwise sums.
    static __m128 sum_four(__m512 a, __m512 b, __m512 c, __m512 d) {
        auto quarter = [](__m512 x) {
            const __m256 half = _mm256_add_ps(_mm512_castps512_ps256(x), _mm512_extractf32x8_ps(x, 1));
            return _mm_add_ps(_mm256_castps256_ps128(half), _mm256_extractf128_ps(half, 1));
        };
        return _mm_hadd_ps(_mm_hadd_ps(quarter(a), quarter(b)), _mm_hadd_ps(quarter(c), quarter(d)));
    }
#endif

    // Scores → p = 2^(s − m') in place (−∞ past `count`, so the padding adds 0), and the
    // running m, ℓ and u of this query caught up with the new max.
    void softmax_row(T* s, std::size_t count, T& m, T& l, T* u) const {
        const std::size_t padded = round_up(count, L);
        for (std::size_t j = count; j < padded; ++j) s[j] = -std::numeric_limits<T>::infinity();
        Vec most = S::splat(-std::numeric_limits<T>::infinity());
        for (std::size_t j = 0; j < padded; j += L) most = S::max(most, S::load(s + j));
        const T m_new = std::max(m, max_lanes<T>(most));
        if (m_new != m) {
            const T r = std::exp2(m - m_new);  // 0 on the first block (m = −∞)
            l *= r;
            for (std::size_t d = 0; d < dv_pad_; d += L) S::store(u + d, S::splat(r) * S::load(u + d));
            m = m_new;
        }
        Vec sum{};
        for (std::size_t j = 0; j < padded; j += L) {
            const Vec p = panel::exp2_bounded(S::load(s + j) - S::splat(m_new));
            S::store(s + j, p);
            sum += p;
        }
        l += sum_lanes(sum);
    }

    // u_r += Σ_k p_rk · v_k over the pass's keys (p_rk taken as 0 for k ≥ keys), for R
    // queries: each value vector is loaded once for all R, each u vector once a pass.
    template <std::size_t R>
    void weigh_values(const T* p, std::size_t keys, std::size_t stride, const T* const* rows, std::size_t offset, T* u) const {
        T w[R][value_keys];
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t k = 0; k < value_keys; ++k) w[r][k] = k < keys ? p[r * stride + k] : T(0);
        const T* v[value_keys];
        for (std::size_t k = 0; k < value_keys; ++k) v[k] = rows[k] + offset;
        // Local copies: a vector store may alias anything, so the members would be read again after each.
        const std::size_t d_v = in_.d_v, pad = dv_pad_;
        std::size_t d = 0;
        for (; d + L <= d_v; d += L) {
            Vec x[value_keys];
            for (std::size_t k = 0; k < value_keys; ++k) x[k] = S::load(v[k] + d);
#pragma GCC unroll 4
            for (std::size_t r = 0; r < R; ++r) {
                Vec sum = S::load(u + r * pad + d);
                for (std::size_t k = 0; k < value_keys; ++k) sum += S::splat(w[r][k]) * x[k];
                S::store(u + r * pad + d, sum);
            }
        }
        for (; d < d_v; ++d)
            for (std::size_t r = 0; r < R; ++r)
                for (std::size_t k = 0; k < value_keys; ++k) u[r * pad + d] += w[r][k] * v[k][d];
    }

    const FastAttentionInput<T>& in_;
    std::size_t chunk_, heads_, group_, dk_pad_, dv_pad_;
    Partials<T>& out_;
};

// Chunks: four per worker, so a worker slowed by the machine's other load leaves the
// rest to the others, but no fewer than block_keys keys each.
std::size_t chosen_chunk(std::size_t tokens, int threads) {
    const std::size_t chunks = 4 * static_cast<std::size_t>(std::max(1, threads));
    return std::max(block_keys, (tokens + chunks - 1) / chunks);
}

template <typename T>
AttentionStats decode_on_target(const FastAttentionInput<T>& in, T* out, const DecodeSettings& settings) {
    const std::size_t chunk = settings.chunk ? settings.chunk : chosen_chunk(in.m, settings.threads);
    const std::size_t chunks = (in.m + chunk - 1) / chunk;
    const std::size_t heads = static_cast<std::size_t>(in.heads);
    const int workers = static_cast<int>(std::clamp<std::size_t>(chunks, 1, static_cast<std::size_t>(std::max(1, settings.threads))));
    Partials<T> partials(chunks, heads, round_up(in.d_v, Simd<T>::lanes));
    DecodeWorker<T> worker(in, chunk, partials);
    std::vector<typename DecodeWorker<T>::Scratch> scratch;
    for (int id = 0; id < workers; ++id) scratch.emplace_back(heads, worker.dk_pad());
    parallel_for(chunks, workers, [&](std::size_t c, int id) { worker.run(c, scratch[static_cast<std::size_t>(id)]); });

    // The merge: each chunk's partial softmax weighed by e^(m_c − M).
    for (std::size_t h = 0; h < heads; ++h) {
        T most = -std::numeric_limits<T>::infinity();
        for (std::size_t c = 0; c < chunks; ++c) most = std::max(most, partials.m[c * heads + h]);
        T sum = 0;
        std::fill(out + h * in.d_v, out + (h + 1) * in.d_v, T(0));
        for (std::size_t c = 0; c < chunks; ++c) {
            const T weight = std::exp2(partials.m[c * heads + h] - most);
            sum += weight * partials.l[c * heads + h];
            const T* u = partials.u.data() + (c * heads + h) * worker.dv_pad();
            for (std::size_t d = 0; d < in.d_v; ++d) out[h * in.d_v + d] += weight * u[d];
        }
        for (std::size_t d = 0; d < in.d_v; ++d) out[h * in.d_v + d] /= sum;
    }
    AttentionStats stats;
    stats.workers = workers;
    stats.block_k = chunk;
    stats.score_bytes_held = static_cast<std::size_t>(workers) * heads * round_up(block_keys, Simd<T>::lanes) * sizeof(T);
    return stats;
}

}  // namespace

AttentionStats decode_attention_f32(const FastAttentionInput<float>& in, float* out, const DecodeSettings& settings) {
    return decode_on_target(in, out, settings);
}
AttentionStats decode_attention_f64(const FastAttentionInput<double>& in, double* out, const DecodeSettings& settings) {
    return decode_on_target(in, out, settings);
}

}  // namespace attn_trace::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attn_trace {

HWY_EXPORT(decode_attention_f32);
HWY_EXPORT(decode_attention_f64);

AttentionStats decode_attention(const FastAttentionInput<float>& in, float* out, const DecodeSettings& settings) {
    settle_kernel_target();
    return HWY_DYNAMIC_DISPATCH(decode_attention_f32)(in, out, settings);
}
AttentionStats decode_attention(const FastAttentionInput<double>& in, double* out, const DecodeSettings& settings) {
    settle_kernel_target();
    return HWY_DYNAMIC_DISPATCH(decode_attention_f64)(in, out, settings);
}

}  // namespace attn_trace
#endif  // HWY_ONCE
