#pragma once
// One sequence of a problem in the fused kernels' form (an AttentionCall): the
// projections, RoPE and the masks as the full trace makes them (attention_parts), for
// the fast path's forward (pipeline_fast.cpp) and grad's fused backward (pipeline_grad.cpp).
#include <optional>

#include "attn_trace/attention_parts.hpp"
#include "attn_trace/backend.hpp"
#include "attn_trace/problem.hpp"

namespace attn_trace {

// `call` points into this object, hence no copies or moves. threads, block_q and
// block_k are left for the caller.
class FusedInputs {
public:
    FusedInputs(const Problem& p, std::size_t batch, const Backend& backend, Dtype dtype);
    FusedInputs(const FusedInputs&) = delete;
    FusedInputs& operator=(const FusedInputs&) = delete;

    AttentionCall call;

private:
    Projections projected_;
    Matrix q_rotated_, k_rotated_;
    std::optional<KeyMask> mask_;
};

}  // namespace attn_trace
