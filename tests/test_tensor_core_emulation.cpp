// The tensor-core kernel's CPU emulation (src/backend/tensor_core_emulation.cpp)
// against float64, its tiling and the calls it takes (the cuda backend's `supports`
// answer): what runs everywhere of the GPU kernel's design (tests/cuda checks the
// kernel itself against this emulation on a GPU).
#include <catch2/catch.hpp>

#include "backend/cuda/tensor_core_tiling.hpp"
#include "backend/tensor_core_emulation.hpp"
#include "tensor_core_cases.hpp"

using namespace attn_trace;
using namespace attn_trace::testing;

TEST_CASE("fp16 and bf16 rounding: nearest, ties to even, fp16's subnormals and overflow") {
    CHECK(round_to_half(1.0f / 3.0f, HalfType::bf16) == 0.333984375f);
    CHECK(round_to_half(1.0f / 3.0f, HalfType::fp16) == 0.333251953125f);
    CHECK(round_to_half(1.0f + 1.0f / 256.0f, HalfType::bf16) == 1.0f);                 // a tie: to the even 1
    CHECK(round_to_half(1.0f + 3.0f / 256.0f, HalfType::bf16) == 1.0f + 4.0f / 256.0f);  // a tie: up to the even
    CHECK(round_to_half(1.0f + 1.0f / 2048.0f, HalfType::fp16) == 1.0f);
    CHECK(round_to_half(65519.0f, HalfType::fp16) == 65504.0f);
    CHECK(std::isinf(round_to_half(65520.0f, HalfType::fp16)));
    CHECK(round_to_half(3.0e-8f, HalfType::fp16) == 5.9604644775390625e-08f);  // 2^-24, the smallest subnormal
    CHECK(round_to_half(1.0e-8f, HalfType::fp16) == 0.0f);
    CHECK(round_to_half(-INFINITY, HalfType::bf16) == -INFINITY);
}

TEST_CASE("the kernel's tiling skips the tiles no row of a block reads") {
    // causal, n = m = 200: block 0 (rows 0–63) reads keys 0–63, one tile; block 3 (rows 192–199) four.
    std::vector<int> first(200, 0), end(200);
    for (int i = 0; i < 200; ++i) end[static_cast<std::size_t>(i)] = i + 1;
    using namespace tensor_cores;
    const KeySpan block0 = block_keys(first.data(), end.data(), 0, 64, 200), block3 = block_keys(first.data(), end.data(), 192, 8, 200);
    CHECK((first_tile(block0) == 0 && end_tile(block0) == 1));
    CHECK((first_tile(block3) == 0 && end_tile(block3) == 4));
    // A block whose rows read nothing loads no tile.
    std::vector<int> none(64, 0);
    const KeySpan empty = block_keys(none.data(), none.data(), 0, 64, 200);
    CHECK(first_tile(empty) == end_tile(empty));
}

TEST_CASE("the tensor-core kernel takes float32 calls with d_k = d_v = 64 or 128 and range masks, and says what it lacks") {
    TensorCoreProblem p;
    make_problem({"window", 10, 12, 64, 2, 1, "window:3"}, p);
    std::string why;
    CHECK(tensor_cores::takes(p.call, why));
    CHECK(why.empty());
    auto refusal = [&](AttentionCall call) {
        std::string reason;
        CHECK_FALSE(tensor_cores::takes(call, reason));
        return reason;
    };
    AttentionCall call = p.call;
    call.dtype = Dtype::f64;
    CHECK(refusal(call) == "the tensor-core kernel computes in float32 (⟦dtype⟧ f32)");
    call = p.call;
    call.d_v = 128;
    CHECK(refusal(call) == "the tensor-core kernel takes d_k = d_v = 64 or 128, found d_k = 64, d_v = 128");
    call = p.call;
    call.softcap = 30.0;
    CHECK(refusal(call) == "the tensor-core kernel has no softcap");
    KeyMask padded = p.mask;
    padded.key_valid.assign(p.k.rows(), 1);
    call = p.call;
    call.mask = &padded;
    CHECK_THAT(refusal(call), Catch::StartsWith("the tensor-core kernel masks by key ranges only"));
    const Matrix no_keys(0, p.k.cols());
    call = p.call;
    call.mask = nullptr;
    call.k = call.v = &no_keys;
    CHECK(refusal(call) == "the tensor-core kernel needs n ≥ 1 and m ≥ 1");
}

TEST_CASE("the tensor-core kernel's arithmetic, emulated, equals float64 to its inputs' precision") {
    for (const auto& c : tensor_core_cases()) {
        TensorCoreProblem p;
        make_problem(c, p);
        const Matrix want = reference_out(p);
        for (const HalfType type : {HalfType::fp16, HalfType::bf16}) {
            p.call.half = type;
            const AttentionResult got = emulate_tensor_core_attention(p.call);
            // Inputs rounded to 11 (fp16) or 8 (bf16) significant bits; P too.
            const double tolerance = type == HalfType::fp16 ? 3e-3 : 2e-2;
            INFO(c.name << " in " << half_type_name(type));
            CHECK(max_abs_difference(got.out, want) < tolerance);
            CHECK(max_abs_difference(got.out, want) > 0);  // it did round: not the float64 answer by accident
            if (c.mask == "causal-bottom-right") {
                CHECK(got.out(0, 0) == 0.0);  // row 0 reads no key: the zero policy
                CHECK(std::isinf(got.row_max(0, 0)));
            }
        }
    }
}
