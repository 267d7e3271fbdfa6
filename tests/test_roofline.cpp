// bench's roofline figures (include/bench/attn_trace/roofline.hpp, bench_work): the
// intensity of known settings, and which roof bounds a point and by how much.
#include <catch2/catch.hpp>

#include "attn_trace/bench.hpp"
#include "attn_trace/roofline.hpp"

using namespace attn_trace;

namespace {

// A setting small enough to run in the tests: GQA 4:2, one fast run, no roofs.
BenchConfig tiny(std::size_t n, std::size_t d_k) {
    BenchConfig c;
    c.lengths = {n};
    c.d_k = d_k;
    c.heads = 4;
    c.kv_heads = 2;
    c.impls = {"fast"};
    c.repeats = 1;
    c.warmup = 0;
    c.measure_roofs = false;
    return c;
}

}  // namespace

TEST_CASE("forward intensity: 4·n²·d flops over Q, K, V and out once", "[bench][roofline]") {
    BenchConfig c;
    c.d_k = 64;
    const BenchWork work = bench_work(c, BenchMode::forward, 1024);
    REQUIRE(work.flops == 4.0 * 1024 * 1024 * 64);
    REQUIRE(work.bytes == 4.0 * 1024 * 64 * 4);  // four (1024, 64) float matrices
    REQUIRE(work.flops / work.bytes == 256.0);
    c.dtype = Dtype::f64;
    REQUIRE(bench_work(c, BenchMode::forward, 1024).bytes == 4.0 * 1024 * 64 * 8);
    c.dtype = Dtype::f32;
    c.causal = true;
    REQUIRE(bench_work(c, BenchMode::forward, 1024).flops == 2.0 * 1024 * 1024 * 64);  // half the products, the same bytes
    REQUIRE(bench_work(c, BenchMode::forward, 1024).bytes == 4.0 * 1024 * 64 * 4);
}

TEST_CASE("decode intensity: the cache read once dominates, about 2·G/(1 + …) FLOP/B in float32", "[bench][roofline]") {
    BenchConfig c;
    c.heads = 32;
    c.kv_heads = 8;
    c.d_k = 128;
    const BenchWork work = bench_work(c, BenchMode::decode, 32768);
    REQUIRE(work.flops == 4.0 * 32768 * 128 * 32);
    REQUIRE(work.cache_bytes == 32768.0 * 8 * (128 + 128) * 4);
    REQUIRE(work.bytes == work.cache_bytes + 2.0 * 32 * 128 * 4);  // q in, out written
    REQUIRE(work.flops / work.bytes == Approx(2.0).epsilon(1e-3));   // G = 4 queries per key: 4·2·2 flops per 8 bytes
}

TEST_CASE("a point is bound by the lower roof, and its fraction is of that bound", "[bench][roofline]") {
    const Roofs roofs{100.0, 10.0};  // GFLOP/s, GB/s: ridge at 10 FLOP/B
    const RooflinePoint low = place_on_roofline(2e9, 1e9, 15.0, roofs, Dtype::f32);
    REQUIRE(low.intensity == 2.0);
    REQUIRE(low.memory_bound);
    REQUIRE(bound_name(low) == "memory");
    REQUIRE(low.bound_gflops == 20.0);
    REQUIRE(low.fraction == 0.75);
    const RooflinePoint high = place_on_roofline(256e9, 1e9, 80.0, roofs, Dtype::f32);
    REQUIRE_FALSE(high.memory_bound);
    REQUIRE(bound_name(high) == "compute");
    REQUIRE(high.bound_gflops == 100.0);
    REQUIRE(high.fraction == 0.8);
    // float64 has half the compute roof, the same bandwidth.
    REQUIRE(place_on_roofline(256e9, 1e9, 40.0, roofs, Dtype::f64).bound_gflops == 50.0);
    REQUIRE(place_on_roofline(256e9, 1e9, 40.0, roofs, Dtype::f64).fraction == 0.8);
}

TEST_CASE("bench without roofs leaves the roofline out, decode settings follow forward ones, heads a multiple of kv_heads", "[bench][roofline]") {
    BenchConfig c = tiny(20, 8);
    const BenchRun run = run_bench(c, nullptr);
    REQUIRE_FALSE(run.roofs);
    REQUIRE(run.results.size() == 1);
    REQUIRE_FALSE(run.results[0].roofline);
    REQUIRE(*run.results[0].max_abs_diff < 1e-5);
    c.cache_lengths = {33};  // a decode setting after the forward one
    const BenchRun both = run_bench(c, nullptr);
    REQUIRE(both.results.size() == 2);
    REQUIRE(both.results[1].mode == BenchMode::decode);
    REQUIRE(both.results[1].n == 1);
    REQUIRE(both.results[1].m == 33);
    REQUIRE(*both.results[1].max_abs_diff < 1e-5);
    c.causal = true;  // a decode step has no causal mask to apply
    REQUIRE_THROWS(run_bench(c, nullptr));
    c.causal = false;
    c.kv_heads = 3;
    REQUIRE_THROWS(run_bench(c, nullptr));
}

TEST_CASE("backward settings: 14·n²·d flops (forward included), eight matrices once, and grad_q judged by the reference", "[bench][roofline][grad]") {
    BenchConfig c;
    c.d_k = 64;
    c.backward = true;
    const BenchWork work = bench_work(c, BenchMode::backward, 1024);
    REQUIRE(work.flops == 14.0 * 1024 * 1024 * 64);
    REQUIRE(work.bytes == 8.0 * 1024 * 64 * 4);  // Q, K, V, dO in; out, dQ, dK, dV out
    c.causal = true;
    REQUIRE(bench_work(c, BenchMode::backward, 1024).flops == 7.0 * 1024 * 1024 * 64);
    c = tiny(37, 12);
    c.backward = true;
    c.causal = true;
    c.threads = 2;
    const BenchRun run = run_bench(c, nullptr);
    REQUIRE(run.results.size() == 1);
    const BenchResult& r = run.results[0];
    REQUIRE(r.mode == BenchMode::backward);
    REQUIRE(bench_mode_name(r.mode) == "backward");
    REQUIRE(r.status == "ok");
    REQUIRE(r.compared_with == "cpu reference grad_q (24 rows)");
    REQUIRE(*r.max_abs_diff < 1e-5);
    REQUIRE(*r.max_abs_diff > 0);  // float32 against the double reference: a judge that compared nothing would give 0
    c.impls = {"naive"};
    REQUIRE_THROWS_WITH(run_bench(c, nullptr), Catch::Contains("no unfused backward"));
}
