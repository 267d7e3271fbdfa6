// The backend table is the one door to computation: the fast path reaches the
// attention through Backend::fused_attention, asks `supports` first, and a backend
// that cannot run a call is exit 3 naming itself, the operation and what is missing.
#include <catch2/catch.hpp>

#include "attn_trace/backend.hpp"
#include "attn_trace/compare.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/tolerances.hpp"
#include "backend/cpu/backend_cpu.hpp"

using namespace attn_trace;

namespace {

Problem small_problem(const std::string& extra = "") {
    return parse_problem(R"({"Q": {"random": {"shape": [5, 4], "seed": 1}}, "K": {"random": {"shape": [7, 4], "seed": 2}},
                             "V": {"random": {"shape": [7, 3], "seed": 3}})" + extra + "}",
                         "backend-test.json");
}

// The CPU backend with its fused attention counted, or refused.
class CountingBackend : public CpuBackend {
public:
    explicit CountingBackend(bool fused) : fused_(fused) {}
    bool supports(Operation op, const AttentionCall* call, std::string& why) const override {
        if (op == Operation::fused_attention && !fused_) {
            why = "the test said no";
            return false;
        }
        return CpuBackend::supports(op, call, why);
    }
    AttentionResult fused_attention(const AttentionCall& call) const override {
        ++calls;
        return CpuBackend::fused_attention(call);
    }
    mutable int calls = 0;

private:
    bool fused_;
};

AttentionCall call_of(const Problem& p, Dtype dtype) {
    AttentionCall call;
    call.q = &*p.Q;
    call.k = &*p.K;
    call.v = &*p.V;
    call.d_k = p.d_k;
    call.d_v = p.d_v;
    call.scale = p.scale_factor();
    call.dtype = dtype;
    return call;
}

}  // namespace

TEST_CASE("attend asks supports first and goes through the backend's fused attention", "[backend]") {
    const Problem p = small_problem();
    const CountingBackend yes(true), no(false);
    const AttentionResult r = attend(yes, Operation::fused_attention, call_of(p, Dtype::f64));
    CHECK(yes.calls == 1);
    const Trace full = pipeline_full(p, {Dtype::f64, "cpu"});
    CHECK(compare_matrices(r.out, full.find(StepName::out, 0, std::nullopt, std::nullopt, std::nullopt)->values, tolerances::same_math_f64).passed());
    CHECK(compare_matrices(r.row_sum.transposed(), full.find(StepName::row_sum, 0, std::nullopt, std::nullopt, std::nullopt)->values,
                           tolerances::same_math_f64).passed());
    REQUIRE_THROWS_AS(attend(no, Operation::fused_attention, call_of(p, Dtype::f64)), BackendUnavailable);
    REQUIRE_THROWS_WITH(attend(no, Operation::fused_attention, call_of(p, Dtype::f64)),
                        "the cpu backend cannot run this fused attention: the test said no");
    CHECK(no.calls == 0);
}

TEST_CASE("the fast path names the backend it ran on, in the problem and in its note", "[backend]") {
    const Trace fast = pipeline_fast(small_problem(), {Dtype::f32, "cpu"}, {});
    CHECK(fast.problem.backend == "cpu");
    REQUIRE_FALSE(fast.notes.empty());
    CHECK(fast.notes.front().kind == NoteKind::fast_path);
    CHECK(fast.notes.front().word("backend") == "cpu");
    CHECK_THAT(note_text(fast.notes.front()), Catch::Contains("on the cpu backend"));
}

TEST_CASE("the cuda backend is exit 3 everywhere without a GPU or a CUDA build", "[backend]") {
    std::string why;
    bool available = true;
    try {
        (void)make_backend("cuda");
    } catch (const BackendUnavailable& e) {
        available = false;
        why = e.what();
    }
    if (available) {
        // With a GPU the same call is a trace equal to the CPU's (tests/cuda checks every kernel).
        const Trace cpu = pipeline_full(small_problem(), {Dtype::f64, "cpu"});
        const Trace gpu = pipeline_full(small_problem(), {Dtype::f64, "cuda"});
        REQUIRE(cpu.steps.size() == gpu.steps.size());
        for (std::size_t i = 0; i < cpu.steps.size(); ++i) {
            INFO(cpu.steps[i].name);
            CHECK(compare_matrices(gpu.steps[i].values, cpu.steps[i].values, tolerances::same_math_f64).passed());
        }
    } else {
        CHECK_THAT(why, Catch::StartsWith("backend cuda: "));
        CHECK_THROWS_AS(pipeline_fast(small_problem(), {Dtype::f32, "cuda"}, {}), BackendUnavailable);
        CHECK_THROWS_AS(pipeline_full(small_problem(), {Dtype::f64, "cuda"}), BackendUnavailable);
    }
}

TEST_CASE("the unfused baseline says what it cannot mask instead of running it", "[backend]") {
    const CpuBackend cpu;
    const Problem p = small_problem(R"(, "softcap": 5)");
    AttentionCall call = call_of(p, Dtype::f32);
    call.softcap = p.softcap;
    std::string why;
    CHECK_FALSE(cpu.supports(Operation::unfused_attention, &call, why));
    CHECK_THAT(why, Catch::Contains("softcap"));  // asked before whether OpenBLAS is there: a property of the call
    CHECK_THROWS_AS(attend(cpu, Operation::unfused_attention, call), BackendUnavailable);
    CHECK(cpu.supports(Operation::fused_attention, &call, why));
}

TEST_CASE("the cpu backend has no tensor-core attention, and attend says so instead of running it", "[backend]") {
    const CpuBackend cpu;
    const Problem p = small_problem();
    const AttentionCall call = call_of(p, Dtype::f32);
    std::string why;
    CHECK_FALSE(cpu.supports(Operation::tensor_core_attention, &call, why));
    CHECK_THAT(why, Catch::Contains("no tensor cores"));
    CHECK_THROWS_WITH(attend(cpu, Operation::tensor_core_attention, call),
                      "the cpu backend cannot run this tensor-core attention: it has no tensor cores (the tensor-core kernel is the cuda backend's)");
}
