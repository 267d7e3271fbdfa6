#pragma once
// The problems the tensor-core kernel and its CPU emulation are checked on
// (tests/test_tensor_core_emulation.cpp everywhere, tests/cuda on a GPU): awkward
// sizes (n = 1, ragged blocks and tiles, n ≠ m), causal and window masks by key
// ranges, a row that reads no key, GQA; and the float64 answer to compare with.
#include <cmath>
#include <string>
#include <vector>

#include "attn_trace/backend.hpp"
#include "attn_trace/random.hpp"

namespace attn_trace::testing {

struct TensorCoreCase {
    std::string name;
    std::size_t n, m, d;
    int heads, kv_heads;
    std::string mask;  // "", "causal", "window:W", "causal-bottom-right" (n > m gives rows that read nothing)
};

inline const std::vector<TensorCoreCase>& tensor_core_cases() {
    static const std::vector<TensorCoreCase> cases = {
        {"one query", 1, 1, 64, 1, 1, ""},          {"ragged, n ≠ m", 70, 131, 64, 1, 1, ""},
        {"causal, d = 128", 130, 130, 128, 1, 1, "causal"}, {"window", 100, 100, 64, 1, 1, "window:9"},
        {"GQA 4 over 2", 65, 65, 64, 4, 2, "causal"}, {"rows that read nothing", 80, 20, 64, 1, 1, "causal-bottom-right"}};
    return cases;
}

// Q, K, V of a case (normal numbers, seeded) and the key ranges of its mask.
struct TensorCoreProblem {
    Matrix q, k, v;
    KeyMask mask;
    AttentionCall call;
};

inline Matrix normal_matrix(std::size_t rows, std::size_t cols, std::uint64_t seed) {
    PortableRandom random(seed);
    Matrix out(rows, cols);
    for (double& x : out.data()) x = random.normal();
    return out;
}

inline void make_problem(const TensorCoreCase& c, TensorCoreProblem& p) {
    p.q = normal_matrix(c.n, static_cast<std::size_t>(c.heads) * c.d, 1);
    p.k = normal_matrix(c.m, static_cast<std::size_t>(c.kv_heads) * c.d, 2);
    p.v = normal_matrix(c.m, static_cast<std::size_t>(c.kv_heads) * c.d, 3);
    if (!c.mask.empty()) {
        const long offset = c.mask == "causal-bottom-right" ? static_cast<long>(c.m) - static_cast<long>(c.n) : 0;
        const long window = c.mask.rfind("window:", 0) == 0 ? std::stol(c.mask.substr(7)) : -1;
        for (std::size_t i = 0; i < c.n; ++i) {
            const long last = static_cast<long>(i) + offset;  // the last key row i may read
            const long first = window >= 0 ? std::max(0L, last - window) : 0;
            p.mask.first_key.push_back(static_cast<std::size_t>(std::min<long>(first, static_cast<long>(c.m))));
            p.mask.end_key.push_back(static_cast<std::size_t>(std::clamp<long>(last + 1, 0, static_cast<long>(c.m))));
        }
    }
    p.call = AttentionCall{};
    p.call.q = &p.q;
    p.call.k = &p.k;
    p.call.v = &p.v;
    p.call.d_k = p.call.d_v = c.d;
    p.call.heads = c.heads;
    p.call.kv_heads = c.kv_heads;
    p.call.scale = 1.0 / std::sqrt(static_cast<double>(c.d));
    p.call.mask = c.mask.empty() ? nullptr : &p.mask;
}

// out in float64, softmax over each row's key range; 0 for a row that reads nothing.
inline Matrix reference_out(const TensorCoreProblem& p) {
    const AttentionCall& c = p.call;
    const std::size_t n = c.n(), m = c.m(), d = c.d_k;
    Matrix out(n, static_cast<std::size_t>(c.heads) * d);
    for (int h = 0; h < c.heads; ++h) {
        const std::size_t g = static_cast<std::size_t>(h / (c.heads / c.kv_heads));
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t first = c.mask ? c.mask->first_key[i] : 0, end = c.mask ? c.mask->end_key[i] : m;
            std::vector<double> z;
            double top = -INFINITY;
            for (std::size_t j = first; j < end; ++j) {
                double s = 0;
                for (std::size_t e = 0; e < d; ++e) s += p.q(i, static_cast<std::size_t>(h) * d + e) * p.k(j, g * d + e);
                z.push_back(s * c.scale);
                top = std::max(top, z.back());
            }
            double sum = 0;
            for (double& x : z) sum += (x = std::exp(x - top));
            for (std::size_t e = 0; e < d; ++e) {
                double acc = 0;
                for (std::size_t j = first; j < end; ++j) acc += z[j - first] * p.v(j, g * d + e);
                out(i, static_cast<std::size_t>(h) * d + e) = z.empty() ? 0.0 : acc / sum;
            }
        }
    }
    return out;
}

inline double max_abs_difference(const Matrix& a, const Matrix& b) {
    double worst = 0;
    for (std::size_t i = 0; i < a.data().size(); ++i) worst = std::max(worst, std::fabs(a.data()[i] - b.data()[i]));
    return worst;
}

}  // namespace attn_trace::testing
