// Every CUDA kernel against the CPU reference on random inputs. Without a GPU
// the program exits 77, which CTest reports as skipped (not failed).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <utility>

#include "attn_trace/compare.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/tolerances.hpp"
#include "backend/cpu/backend_cpu.hpp"
#include "backend/cuda/backend_cuda.hpp"
#include "backend/tensor_core_emulation.hpp"
#include "tensor_core_cases.hpp"

using namespace attn_trace;

namespace {

// Q (n, heads·d), K (m, kv_heads·d), V (m, kv_heads·dv).
Problem random_problem(std::size_t n, std::size_t m, std::size_t d, std::size_t dv, const std::string& extra, int heads = 1, int kv_heads = 1) {
    return parse_problem(fmt::format(R"({{"Q": {{"random": {{"shape": [{}, {}], "seed": 11}}}}, "K": {{"random": {{"shape": [{}, {}], "seed": 12}}}},
                                        "V": {{"random": {{"shape": [{}, {}], "seed": 13}}}}, "heads": {}, "kv_heads": {} {}}})",
                                     n, heads * d, m, kv_heads * d, m, kv_heads * dv, heads, kv_heads, extra),
                         "cuda-test.json");
}

// The first few mismatches, for a readable failure.
void require_close(const Matrix& got, const Matrix& want, Tolerance tolerance, const std::string& what) {
    const Comparison c = compare_matrices(got, want, tolerance);
    INFO(what << ": " << c.failed << " of " << c.compared << " differ, max error " << c.max_error);
    REQUIRE(c.passed());
}

}  // namespace

TEST_CASE("CUDA matrix products equal the CPU reference") {
    const CpuBackend cpu;
    const CudaBackend cuda;
    for (auto [n, k, m] : {std::array<std::size_t, 3>{1, 1, 1}, {17, 33, 5}, {64, 64, 64}, {100, 7, 129}}) {
        const Problem p = random_problem(n, m, k, k, "");
        for (Dtype dtype : {Dtype::f64, Dtype::f32}) {
            const Tolerance tolerance = dtype == Dtype::f64 ? tolerances::same_math_f64 : tolerances::f32_vs_f64;
            require_close(cuda.multiply_transposed(*p.Q, *p.K, dtype), cpu.multiply_transposed(*p.Q, *p.K, dtype), tolerance, "Q Kᵀ");
            require_close(cuda.multiply(p.K->transposed(), *p.V, dtype), cpu.multiply(p.K->transposed(), *p.V, dtype), tolerance, "Kᵀ V");
        }
    }
}

TEST_CASE("the whole trace on --backend cuda equals the CPU trace") {
    const Problem p = random_problem(9, 13, 8, 6, R"(, "heads": 2, "mask": "causal-bottom-right")");
    const Trace cpu = pipeline_full(p, {Dtype::f64, "cpu"});
    const Trace cuda = pipeline_full(p, {Dtype::f64, "cuda"});
    REQUIRE(cuda.problem.backend == "cuda");
    REQUIRE(cuda.steps.size() == cpu.steps.size());
    for (std::size_t s = 0; s < cpu.steps.size(); ++s) require_close(cuda.steps[s].values, cpu.steps[s].values, tolerances::same_math_f64, step_name(cpu.steps[s].name));
}

TEST_CASE("in f16 and bf16 the CUDA trace follows the CPU's rounding model (docs/PROBLEM.md#dtype-half-precision)") {
    const Problem p = random_problem(9, 13, 8, 6, R"(, "mask": "causal-bottom-right")", 2, 1);
    for (Dtype dtype : {Dtype::f16, Dtype::bf16}) {
        for (const auto& [cpu, cuda] : {std::pair{pipeline_full(p, {dtype, "cpu"}), pipeline_full(p, {dtype, "cuda"})},
                                        std::pair{pipeline_grad(p, {dtype, "cpu"}, {}), pipeline_grad(p, {dtype, "cuda"}, {})}}) {
            REQUIRE(cuda.steps.size() == cpu.steps.size());
            for (std::size_t s = 0; s < cpu.steps.size(); ++s) {
                // Both sum in f32, in their own order: a sum near a rounding boundary may round to
                // the neighbouring value of the type, and later steps carry that as a few units.
                double largest = 0;
                for (double x : cpu.steps[s].values.data())
                    if (std::isfinite(x)) largest = std::max(largest, std::fabs(x));
                const double u = unit_roundoff(dtype);
                INFO(dtype_name(dtype));
                require_close(cuda.steps[s].values, cpu.steps[s].values, Tolerance{8 * u * largest, 8 * u}, step_label(cpu.steps[s]));
                for (double x : cuda.steps[s].values.data()) REQUIRE((!std::isfinite(x) || round_to(dtype, x) == x));  // stored in the type
            }
        }
    }
}

TEST_CASE("run --fast --backend cuda equals the CPU's fast path and the reference: masks by ranges, GQA, edge sizes") {
    struct Case { std::size_t n, m, d; const char* extra; int heads = 1, kv_heads = 1; };
    for (const Case c : {Case{1, 1, 4, ""}, Case{1, 300, 64, ""}, Case{100, 77, 64, R"(, "mask": "causal")"},
                         Case{77, 100, 128, R"(, "mask": "causal-bottom-right")"}, Case{65, 65, 32, R"(, "mask": "window:5")"},
                         Case{40, 40, 16, R"(, "mask": "causal")", 4, 2}, Case{70, 70, 8, "", 3, 1}}) {
        const Problem p = random_problem(c.n, c.m, c.d, c.d, std::string(c.extra) + R"(, "empty_rows": "zero")", c.heads, c.kv_heads);
        const Trace reference = pipeline_full(p, {Dtype::f64, "cpu"});
        const Trace cpu = pipeline_fast(p, {Dtype::f32, "cpu"}, {});
        const Trace gpu = pipeline_fast(p, {Dtype::f32, "cuda"}, {});
        REQUIRE(gpu.problem.backend == "cuda");
        for (int h = 0; h < p.heads; ++h)
            for (StepName step : {StepName::out, StepName::row_max, StepName::row_sum}) {
                const std::string what = fmt::format("{} head {} n={} m={} d={}{}", step, h, c.n, c.m, c.d, c.extra);
                require_close(gpu.find(step, h, std::nullopt, std::nullopt, std::nullopt)->values,
                              cpu.find(step, h, std::nullopt, std::nullopt, std::nullopt)->values, tolerances::f32_vs_f64, what);
                require_close(gpu.find(step, h, std::nullopt, std::nullopt, std::nullopt)->values,
                              reference.find(step, h, std::nullopt, std::nullopt, std::nullopt)->values, tolerances::f32_vs_f64, what);
            }
    }
}

TEST_CASE("the cuda backend says what its fused kernel cannot do, and the fast path exits 3 on it") {
    const CudaBackend cuda;
    std::string why;
    const Problem p = random_problem(4, 4, 4, 4, R"(, "softcap": 5)");
    REQUIRE_THROWS_AS(pipeline_fast(p, {Dtype::f32, "cuda"}, {}), BackendUnavailable);
    REQUIRE_THROWS_AS(pipeline_fast(random_problem(4, 4, 4, 4, ""), {Dtype::f64, "cuda"}, {}), BackendUnavailable);
    CHECK_FALSE(cuda.supports(Operation::unfused_attention, nullptr, why));
}

TEST_CASE("the tensor-core kernel equals its CPU emulation and float64, fp16 and bf16, masks by ranges, GQA, edge sizes") {
    const CudaBackend cuda;
    for (const auto& c : testing::tensor_core_cases()) {
        testing::TensorCoreProblem p;
        testing::make_problem(c, p);
        const Matrix want = testing::reference_out(p);
        for (const HalfType type : {HalfType::fp16, HalfType::bf16}) {
            INFO(c.name << " in " << half_type_name(type));
            p.call.half = type;
            const AttentionResult gpu = attend(cuda, Operation::tensor_core_attention, p.call);
            const AttentionResult emulated = emulate_tensor_core_attention(p.call);
            // Same roundings, sums in another order: P may round to the neighbouring value.
            CHECK(testing::max_abs_difference(gpu.out, emulated.out) < (type == HalfType::fp16 ? 2e-3 : 1.5e-2));
            CHECK(testing::max_abs_difference(gpu.row_max, emulated.row_max) < 1e-4);
            CHECK(testing::max_abs_difference(gpu.out, want) < (type == HalfType::fp16 ? 3e-3 : 2e-2));
        }
    }
}

TEST_CASE("the cuda backend's supports answers for the tensor-core kernel, and attend refuses what it does not take") {
    const CudaBackend cuda;
    testing::TensorCoreProblem taken, narrow;
    testing::make_problem(testing::tensor_core_cases().front(), taken);
    testing::make_problem({"d = 32", 4, 4, 32, 1, 1, ""}, narrow);
    std::string why;
    CHECK(cuda.supports(Operation::tensor_core_attention, &taken.call, why));
    CHECK_FALSE(cuda.supports(Operation::tensor_core_attention, &narrow.call, why));
    CHECK(why == "the tensor-core kernel takes d_k = d_v = 64 or 128, found d_k = 32, d_v = 32");
    CHECK_THROWS_AS(attend(cuda, Operation::tensor_core_attention, narrow.call), BackendUnavailable);
}

int main(int argc, char** argv) {
    std::string why;
    if (!cuda_device_available(why)) {
        std::cout << "skipped: " << why << "\n";
        return 77;  // CTest SKIP_RETURN_CODE
    }
    return Catch::Session().run(argc, argv);
}
