// The one place that knows which backends were built in, and the one door to
// their attention operations.
#include <fmt/format.h>

#include <stdexcept>

#include "attn_trace/backend.hpp"
#include "attn_trace/errors.hpp"
#include "cpu/backend_cpu.hpp"
#ifdef ATTN_TRACE_HAS_CUDA
#include "cuda/backend_cuda.hpp"
#endif

namespace attn_trace {

bool KeyMask::patterns_allow(std::size_t i, std::size_t j, std::size_t n, std::size_t m) const {
    for (const auto& pattern : patterns)
        if (!sparse_visible(pattern, i, j, n, m)) return false;
    return true;
}

bool KeyMask::patterns_touch(std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1, std::size_t n, std::size_t m) const {
    for (const auto& pattern : patterns)
        if (!sparse_touches(pattern, i0, i1, j0, j1, n, m)) return false;
    return true;
}

bool KeyMask::patterns_cover(std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1, std::size_t n, std::size_t m) const {
    for (const auto& pattern : patterns)
        if (!sparse_covers(pattern, i0, i1, j0, j1, n, m)) return false;
    return true;
}

std::string operation_name(Operation op) {
    switch (op) {
        case Operation::multiply: return "matrix product";
        case Operation::multiply_transposed: return "matrix product with a transpose";
        case Operation::fused_attention: return "fused attention";
        case Operation::unfused_attention: return "unfused attention";
        case Operation::tensor_core_attention: return "tensor-core attention";
        case Operation::fused_attention_backward: return "fused attention backward";
        case Operation::decode_attention: return "decode attention";
    }
    return "an unknown operation";
}

std::string half_type_name(HalfType type) { return type == HalfType::fp16 ? "fp16" : "bf16"; }

namespace {

void ask(const Backend& backend, Operation op, const AttentionCall& call) {
    std::string why;
    if (!backend.supports(op, &call, why))
        throw BackendUnavailable(fmt::format("the {} backend cannot run this {}: {}", backend.name(), operation_name(op), why));
}

}  // namespace

AttentionGradients attend_backward(const Backend& backend, const AttentionCall& call, const Matrix& d_out) {
    ask(backend, Operation::fused_attention_backward, call);
    return backend.fused_attention_backward(call, d_out);
}

AttentionResult attend(const Backend& backend, Operation op, const AttentionCall& call) {
    ask(backend, op, call);
    switch (op) {
        case Operation::fused_attention: return backend.fused_attention(call);
        case Operation::unfused_attention: return backend.unfused_attention(call);
        case Operation::tensor_core_attention: return backend.tensor_core_attention(call);
        case Operation::decode_attention: return backend.decode_attention(call);
        case Operation::multiply:
        case Operation::multiply_transposed:
        case Operation::fused_attention_backward: break;
    }
    throw std::logic_error("attend: " + operation_name(op) + " is not an attention operation");
}

AttentionResult Backend::decode_attention(const AttentionCall&) const {
    throw BackendUnavailable(fmt::format("the {} backend has no decode attention", name()));
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
    if (name == "cpu") return std::make_unique<CpuBackend>();
    if (name == "cuda") {
#ifdef ATTN_TRACE_HAS_CUDA
        std::string why;
        if (!cuda_device_available(why)) throw BackendUnavailable("⟦backend⟧ cuda: " + why);
        return std::make_unique<CudaBackend>();
#else
        throw BackendUnavailable("⟦backend⟧ cuda: this build has no CUDA backend (build it with nvcc installed: ATTN_TRACE_CUDA=ON bash tools/setup.sh, or cmake -DATTN_TRACE_CUDA=ON)");
#endif
    }
    throw InputError(fmt::format("⟦backend⟧: expected cpu or cuda, found '{}'", name));
}

}  // namespace attn_trace
