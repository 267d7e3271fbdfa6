#pragma once
// The CUDA backend's tensor-core attention kernel, emulated on the CPU: the same
// tiles (src/backend/cuda/tensor_core_tiling.hpp), the same roundings (Q, K, V to
// fp16 or bf16; S, the softmax, ℓ and O in float32; P rounded to the input type
// before P V). It is the kernel's twin in the tests: it runs everywhere, so the
// tiling, the masking and the rounding are checked against the f64 reference on
// machines without a GPU, and on a GPU the kernel is checked against it.
#include "attn_trace/backend.hpp"

namespace attn_trace {

// x rounded to the nearest fp16 or bf16 value (ties to even), as a float;
// past fp16's range, ±inf.
float round_to_half(float x, HalfType type);

// softmax(s·Q Kᵀ + M) V for every head as the kernel computes it, the inputs rounded
// to call.half; for the calls the kernel takes (tensor_cores::takes), except that any
// d_k = d_v will do. row_max is in natural units, −∞ for a row that reads no key
// (whose out is 0, or NaN).
AttentionResult emulate_tensor_core_attention(const AttentionCall& call);

}  // namespace attn_trace
