// The decode kernel (src/backend/cpu/decode_attention.cpp) through the backend table,
// against a plain double loop: GQA and not, a cache that is not a whole number of
// chunks, head widths that are not a whole number of vectors, one and two threads, T = 1.
// Tagged [fast]: CTest runs it once per kernel target (kernel_avx512, kernel_avx2, kernel_baseline).
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "attn_trace/backend.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/random.hpp"

using namespace attn_trace;

namespace {

Matrix normal(std::size_t rows, std::size_t cols, std::uint64_t seed) {
    Matrix x(rows, cols);
    PortableRandom generator(seed);
    for (double& value : x.data()) value = generator.normal();
    return x;
}

// out_h = softmax(s·q_h K_gᵀ) V_g in double, g = h / (H / H_kv), written the plain way.
std::vector<double> reference(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t d_k, std::size_t d_v, int heads, int kv_heads) {
    const double scale = 1 / std::sqrt(static_cast<double>(d_k));
    std::vector<double> out(static_cast<std::size_t>(heads) * d_v, 0.0);
    for (int h = 0; h < heads; ++h) {
        const std::size_t g = static_cast<std::size_t>(h / (heads / kv_heads));
        std::vector<double> z(k.rows());
        double most = -INFINITY, sum = 0;
        for (std::size_t t = 0; t < k.rows(); ++t) {
            for (std::size_t d = 0; d < d_k; ++d) z[t] += q(0, static_cast<std::size_t>(h) * d_k + d) * k(t, g * d_k + d);
            z[t] *= scale;
            most = std::max(most, z[t]);
        }
        for (std::size_t t = 0; t < k.rows(); ++t) {
            const double p = std::exp(z[t] - most);
            sum += p;
            for (std::size_t d = 0; d < d_v; ++d) out[static_cast<std::size_t>(h) * d_v + d] += p * v(t, g * d_v + d);
        }
        for (std::size_t d = 0; d < d_v; ++d) out[static_cast<std::size_t>(h) * d_v + d] /= sum;
    }
    return out;
}

struct Shape {
    std::size_t tokens, d_k, d_v;
    int heads, kv_heads, threads;
    std::size_t chunk;  // 0 = the kernel's own
};

void require_decode_matches(const Shape& s, Dtype dtype, bool float_views) {
    const Matrix q = normal(1, static_cast<std::size_t>(s.heads) * s.d_k, 1);
    const Matrix k = normal(s.tokens, static_cast<std::size_t>(s.kv_heads) * s.d_k, 2);
    const Matrix v = normal(s.tokens, static_cast<std::size_t>(s.kv_heads) * s.d_v, 3);
    const std::vector<float> q32(q.data().begin(), q.data().end()), k32(k.data().begin(), k.data().end()), v32(v.data().begin(), v.data().end());
    AttentionCall call;
    call.q = &q;
    call.k = &k;
    call.v = &v;
    call.d_k = s.d_k;
    call.d_v = s.d_v;
    call.heads = s.heads;
    call.kv_heads = s.kv_heads;
    call.scale = 1 / std::sqrt(static_cast<double>(s.d_k));
    call.dtype = dtype;
    call.threads = s.threads;
    call.decode_chunk = s.chunk;
    if (float_views) {
        call.q_f32 = q32.data();
        call.k_f32 = k32.data();
        call.v_f32 = v32.data();
    }
    const auto backend = make_backend("cpu");
    const AttentionResult result = attend(*backend, Operation::decode_attention, call);
    const std::vector<double> want = reference(q, k, v, s.d_k, s.d_v, s.heads, s.kv_heads);
    REQUIRE(result.out.rows() == 1);
    REQUIRE(result.out.cols() == want.size());
    // float32: the inputs rounded to float (2^-24 relative) and sums over T keys in float.
    const double tolerance = dtype == Dtype::f64 ? 1e-13 : 2e-6;
    for (std::size_t i = 0; i < want.size(); ++i) {
        INFO("T = " << s.tokens << ", d_k = " << s.d_k << ", H = " << s.heads << ", H_kv = " << s.kv_heads << ", threads = " << s.threads
                    << ", chunk = " << s.chunk << ", value " << i);
        REQUIRE(std::abs(result.out.data()[i] - want[i]) <= tolerance);
    }
}

}  // namespace

TEST_CASE("decode kernel equals a plain double loop, GQA 4:1 and 1:1, ragged chunks and widths", "[fast][decode]") {
    const Shape shapes[] = {
        {50, 19, 19, 8, 2, 1, 7},     // GQA 4:1, T not a multiple of the chunk, d_k not a multiple of any vector width
        {50, 19, 19, 8, 2, 2, 7},     // the same on two threads
        {300, 64, 64, 3, 3, 2, 0},    // 1:1, the kernel's own chunk
        {1, 16, 16, 4, 1, 2, 0},      // T = 1: one key, every weight 1
        {1000, 128, 128, 32, 8, 2, 0},  // the bench's GQA shape at a small T, several key blocks per chunk
        {77, 5, 9, 6, 3, 1, 33},      // d_v ≠ d_k, two query heads per KV head
    };
    for (const Shape& shape : shapes) {
        require_decode_matches(shape, Dtype::f32, true);
        require_decode_matches(shape, Dtype::f32, false);  // rounded from the double matrices
        require_decode_matches(shape, Dtype::f64, false);
    }
}

TEST_CASE("decode kernel keeps a key far above the others exact (the running max moves late)", "[fast][decode]") {
    Matrix q(1, 8), k(200, 8), v(200, 8);
    for (std::size_t d = 0; d < 8; ++d) q(0, d) = 1;
    for (std::size_t t = 0; t < 200; ++t)
        for (std::size_t d = 0; d < 8; ++d) {
            k(t, d) = t == 190 ? 40.0 : 0.01 * static_cast<double>(t % 7);
            v(t, d) = static_cast<double>(t);
        }
    AttentionCall call;
    call.q = &q;
    call.k = &k;
    call.v = &v;
    call.d_k = call.d_v = 8;
    call.scale = 1 / std::sqrt(8.0);
    call.threads = 2;
    call.decode_chunk = 16;
    const AttentionResult result = attend(*make_backend("cpu"), Operation::decode_attention, call);
    for (std::size_t d = 0; d < 8; ++d) REQUIRE(result.out(0, d) == Approx(190.0).epsilon(1e-5));
}

TEST_CASE("decode kernel refuses more than one query and masks", "[decode]") {
    const Matrix q = normal(2, 8, 1), k = normal(5, 8, 2), v = normal(5, 8, 3);
    AttentionCall call;
    call.q = &q;
    call.k = &k;
    call.v = &v;
    call.d_k = call.d_v = 8;
    std::string why;
    const auto backend = make_backend("cpu");
    REQUIRE_FALSE(backend->supports(Operation::decode_attention, &call, why));
    REQUIRE(why.find("n = 2") != std::string::npos);
    REQUIRE_THROWS_AS(attend(*backend, Operation::decode_attention, call), BackendUnavailable);
}
