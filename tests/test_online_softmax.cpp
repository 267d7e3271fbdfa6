// The online softmax's update has one definition (include/core/attn_trace/online_softmax.hpp),
// which the scalar paths call. The CPU fast path's SIMD kernel cannot call it (it
// works lane by lane, in base 2, with its own 2^x), so here it is held to it: a
// scalar online softmax written only with the definition, over the kernel's own key
// tiles, against the kernel through the backend table. The cases put −∞ where it
// matters: rows that read no key at all, rows whose first tiles are all masked (m
// stays −∞ across a tile, then rises from it), an empty row in a panel beside rows
// that read keys, and tiles the kernel skips whole (the definition, which walks them,
// must leave the row as it was). Tagged [fast]: CTest runs it on every kernel target.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "attn_trace/backend.hpp"
#include "attn_trace/compare.hpp"
#include "attn_trace/online_softmax.hpp"
#include "attn_trace/tolerances.hpp"
#include "backend/cpu/backend_cpu.hpp"
#include "tensor_core_cases.hpp"

using namespace attn_trace;

namespace {

constexpr double minus_infinity = -std::numeric_limits<double>::infinity();

// out, row_max and row_sum as the fused kernel returns them, computed in T by the
// definition alone: every tile of call.block_k keys from key 0, each key's score
// −∞ where the mask hides it.
template <typename T>
AttentionResult by_the_definition(const AttentionCall& call) {
    const std::size_t n = call.n(), m = call.m(), heads = static_cast<std::size_t>(call.heads);
    const std::size_t group = heads / static_cast<std::size_t>(call.kv_heads);
    const KeyMask* mask = call.mask;
    AttentionResult result{Matrix(n, heads * call.d_v), Matrix(heads, n), Matrix(heads, n), {}};
    for (std::size_t h = 0; h < heads; ++h) {
        const std::size_t g = h / group;
        for (std::size_t i = 0; i < n; ++i) {
            T m_i = -std::numeric_limits<T>::infinity(), l = 0;
            std::vector<T> u(call.d_v, T(0));
            for (std::size_t j0 = 0; j0 < m; j0 += call.block_k) {
                const std::size_t cols = std::min(call.block_k, m - j0);
                std::vector<T> z(cols);
                T m_new = m_i;
                for (std::size_t c = 0; c < cols; ++c) {
                    const std::size_t j = j0 + c;
                    const bool visible = (!mask || mask->first_key.empty() || (j >= mask->first_key[i] && j < mask->end_key[i])) &&
                                         (!mask || mask->key_valid.empty() || mask->key_valid[j]);
                    T s = 0;
                    for (std::size_t e = 0; e < call.d_k; ++e)
                        s += static_cast<T>((*call.q)(i, h * call.d_k + e)) * static_cast<T>((*call.k)(j, g * call.d_k + e));
                    s *= static_cast<T>(call.scale);
                    if (mask && !mask->dense.empty()) s = static_cast<T>(static_cast<double>(s) + mask->dense(i, j));
                    z[c] = visible ? s : -std::numeric_limits<T>::infinity();
                    m_new = online_softmax::raised_max(m_new, z[c]);
                }
                const T rescale = online_softmax::rescale(m_i, m_new);
                T sum = 0;
                std::vector<T> pv(call.d_v, T(0));
                for (std::size_t c = 0; c < cols; ++c) {
                    const T p = online_softmax::weight(z[c], m_new);
                    sum += p;
                    for (std::size_t e = 0; e < call.d_v; ++e) pv[e] += p * static_cast<T>((*call.v)(j0 + c, g * call.d_v + e));
                }
                l = online_softmax::rescaled_sum(l, rescale, sum);
                for (std::size_t e = 0; e < call.d_v; ++e) u[e] = online_softmax::rescaled_sum(u[e], rescale, pv[e]);
                m_i = m_new;
            }
            const double empty = call.empty_rows_nan ? std::numeric_limits<double>::quiet_NaN() : 0.0;
            for (std::size_t e = 0; e < call.d_v; ++e) result.out(i, h * call.d_v + e) = l == T(0) ? empty : static_cast<double>(u[e] / l);
            result.row_max(h, i) = static_cast<double>(m_i);
            result.row_sum(h, i) = static_cast<double>(l);
        }
    }
    return result;
}

struct Case {
    std::string name;
    std::size_t n, m;
    int heads, kv_heads;
    KeyMask mask;
    bool empty_rows_nan = false;
};

std::vector<Case> cases() {
    std::vector<Case> out;
    out.push_back({"no mask: every tile after the first shifted by the old max, then raised", 21, 37, 1, 1, {}});
    Case bottom_right{"causal-bottom-right, n > m: the first rows read no key", 29, 11, 2, 1, {}, true};
    for (std::size_t i = 0; i < bottom_right.n; ++i) {
        const long end = static_cast<long>(i) + 11 - 29 + 1;
        bottom_right.mask.first_key.push_back(0);
        bottom_right.mask.end_key.push_back(static_cast<std::size_t>(std::max(0L, end)));
    }
    out.push_back(bottom_right);
    Case invalid{"key_valid: the first 10 keys invalid, so the first tiles are all −∞", 18, 30, 1, 1, {}};
    for (std::size_t j = 0; j < invalid.m; ++j) invalid.mask.key_valid.push_back(j >= 10 ? 1 : 0);
    out.push_back(invalid);
    // Row i sees keys j ≥ 2i only (later rows start their softmax tiles later), row 5
    // none, beside rows that read keys in the same panel; and a few finite biases.
    Case dense{"dense: per-row leading −∞, an empty row inside a panel, biases", 13, 33, 1, 1, {}};
    dense.mask.dense = Matrix(13, 33);
    for (std::size_t i = 0; i < 13; ++i)
        for (std::size_t j = 0; j < 33; ++j) dense.mask.dense(i, j) = i == 5 || j < 2 * i ? minus_infinity : 0.25 * static_cast<double>(j % 3);
    out.push_back(dense);
    Case window{"window of 3: each panel's rows read different keys of a tile", 40, 40, 2, 2, {}};
    for (std::size_t i = 0; i < window.n; ++i) {
        window.mask.first_key.push_back(i >= 3 ? i - 3 : 0);
        window.mask.end_key.push_back(i + 1);
    }
    out.push_back(window);
    return out;
}

}  // namespace

TEST_CASE("the online softmax's update: the max rises, ℓ and u rescale, and a row with no key yet stays 0, not NaN", "[fast]") {
    using namespace online_softmax;
    const double inf = std::numeric_limits<double>::infinity();
    CHECK(raised_max(-inf, 2.0) == 2.0);
    CHECK(raised_max(3.0, 2.0) == 3.0);
    CHECK(raised_max(-inf, std::nan("")) == -inf);  // a NaN score does not become the max
    CHECK(rescale(1.0, 3.0) == std::exp(-2.0));
    CHECK(rescale(2.0, 2.0) == 1.0);
    CHECK(rescale(-inf, 2.0) == 0.0);   // the first visible key: nothing to carry over
    CHECK(rescale(-inf, -inf) == 1.0);  // no key yet: e^(−∞ − (−∞)) would be NaN
    CHECK(weight(1.0, 3.0) == std::exp(-2.0));
    CHECK(weight(-inf, 3.0) == 0.0);
    CHECK(weight(-inf, -inf) == 0.0);  // a blocked key while the row has no max: 0, not NaN
    CHECK(rescaled_sum(2.0, 0.5, 3.0) == 4.0);
    // A tile in which every key is blocked leaves an empty row exactly empty.
    const float m_new = raised_max(-INFINITY, -INFINITY);
    const float r = rescale(-INFINITY, m_new);
    CHECK(rescaled_sum(0.0f, r, weight(-INFINITY, m_new)) == 0.0f);
}

TEST_CASE("the fast path's SIMD online softmax equals the one definition, −∞ rows and all-masked tiles included", "[fast]") {
    const CpuBackend cpu;
    for (Case& c : cases()) {
        const std::size_t d_k = 5, d_v = 3;
        const Matrix q = testing::normal_matrix(c.n, static_cast<std::size_t>(c.heads) * d_k, 21);
        const Matrix k = testing::normal_matrix(c.m, static_cast<std::size_t>(c.kv_heads) * d_k, 22);
        const Matrix v = testing::normal_matrix(c.m, static_cast<std::size_t>(c.kv_heads) * d_v, 23);
        for (const Dtype dtype : {Dtype::f64, Dtype::f32}) {
            AttentionCall call;
            call.q = &q;
            call.k = &k;
            call.v = &v;
            call.d_k = d_k;
            call.d_v = d_v;
            call.heads = c.heads;
            call.kv_heads = c.kv_heads;
            call.scale = 0.7;
            call.mask = &c.mask;
            call.dtype = dtype;
            call.empty_rows_nan = c.empty_rows_nan;
            call.block_k = 4;
            const AttentionResult kernel = attend(cpu, Operation::fused_attention, call);
            const AttentionResult want = dtype == Dtype::f64 ? by_the_definition<double>(call) : by_the_definition<float>(call);
            // The same update, with 2^x of the scores in base 2 for e^x (within an ulp or
            // two) and the products summed in another order: rounding apart, and −∞, 0
            // and NaN exactly where the definition has them.
            const Tolerance tolerance = dtype == Dtype::f64 ? tolerances::same_math_f64 : tolerances::f32_vs_f64;
            for (const auto& [what, got, expected] : {std::tuple{"out", &kernel.out, &want.out}, std::tuple{"row_max", &kernel.row_max, &want.row_max},
                                                      std::tuple{"row_sum", &kernel.row_sum, &want.row_sum}}) {
                const Comparison comparison = compare_matrices(*got, *expected, tolerance);
                INFO(c.name << ", " << dtype_name(dtype) << ", " << what << ": " << comparison.failed << " of " << comparison.compared
                            << " differ, max error " << comparison.max_error);
                CHECK(comparison.passed());
            }
        }
    }
}
