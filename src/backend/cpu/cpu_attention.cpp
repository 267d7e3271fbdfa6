// The CPU backend's attention operations: an AttentionCall in the kernels' form
// (strided views, the dtype as a type), their output back as matrices.
#include <algorithm>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "backend_cpu.hpp"
#include "blas_library.hpp"
#include "decode_attention.hpp"
#include "fast_attention.hpp"
#include "flash_backward.hpp"
#include "naive_attention.hpp"

namespace attn_trace {

namespace {

template <typename T, typename Source>
FastAttentionInput<T, Source> kernel_input(const AttentionCall& call, const Source* q, const Source* k, const Source* v) {
    FastAttentionInput<T, Source> input;
    input.q = q;
    input.k = k;
    input.v = v;
    input.q_stride = call.q->cols();
    input.k_stride = call.k->cols();
    input.v_stride = call.v->cols();
    input.n = call.n();
    input.m = call.m();
    input.d_k = call.d_k;
    input.d_v = call.d_v;
    input.heads = call.heads;
    input.kv_heads = call.kv_heads;
    input.scale = call.scale;
    input.softcap = call.softcap;
    input.mask = call.mask;
    return input;
}

// What a kernel writes in T, turned into the result's matrices.
template <typename T>
class KernelBuffers {
public:
    KernelBuffers(const AttentionCall& call, bool statistics) {
        const auto heads = static_cast<std::size_t>(call.heads);
        result_.out = Matrix(call.n(), heads * call.d_v);
        if (statistics) result_.row_max = result_.row_sum = Matrix(heads, call.n());
        if constexpr (!writes_result) {
            out_.resize(result_.out.data().size());
            row_max_.resize(result_.row_max.data().size());
            row_sum_.resize(row_max_.size());
        }
    }

    FastAttentionOutput<T> output(const AttentionCall& call) {
        const bool statistics = !result_.row_max.data().empty();
        if constexpr (writes_result)
            return {result_.out.data().data(), statistics ? result_.row_max.data().data() : nullptr, statistics ? result_.row_sum.data().data() : nullptr,
                    call.empty_rows_nan ? std::numeric_limits<T>::quiet_NaN() : T(0)};
        else
            return {out_.data(), statistics ? row_max_.data() : nullptr, statistics ? row_sum_.data() : nullptr,
                    call.empty_rows_nan ? std::numeric_limits<T>::quiet_NaN() : T(0)};
    }

    AttentionResult result(const AttentionStats& stats) && {
        if constexpr (!writes_result) {
            std::copy(out_.begin(), out_.end(), result_.out.data().begin());
            std::copy(row_max_.begin(), row_max_.end(), result_.row_max.data().begin());
            std::copy(row_sum_.begin(), row_sum_.end(), result_.row_sum.data().begin());
        }
        result_.stats = stats;
        return std::move(result_);
    }

private:
    // A double kernel writes the result's matrices themselves: a buffer beside them would
    // be another copy of the output, as large as V (docs/PERFORMANCE.md#the-fast-paths-memory).
    static constexpr bool writes_result = std::is_same_v<T, double>;

    AttentionResult result_;
    std::vector<T> out_, row_max_, row_sum_;  // a float kernel's own, widened into result_ at the end
};

template <typename T>
AttentionResult fused(const AttentionCall& call) {
    FastAttentionSettings settings;
    settings.threads = call.threads;
    if (call.block_q) settings.block_q = call.block_q;
    if (call.block_k) settings.block_k = call.block_k;
    // The kernel reads the double matrices in place, rounding to T as it packs them.
    const auto input = kernel_input<T, double>(call, call.q->data().data(), call.k->data().data(), call.v->data().data());
    KernelBuffers<T> buffers(call, true);
    const AttentionStats stats = fast_attention(input, buffers.output(call), settings);
    return std::move(buffers).result(stats);
}

template <typename T>
AttentionResult unfused(const AttentionCall& call) {
    // BLAS reads T: float32 gets a rounded copy of the inputs (O(n·d), beside the O(n²·d) products).
    auto in_t = [](const Matrix& x) { return std::vector<T>(x.data().begin(), x.data().end()); };
    const std::vector<T> q = in_t(*call.q), k = in_t(*call.k), v = in_t(*call.v);
    KernelBuffers<T> buffers(call, false);
    const AttentionStats stats = naive_attention(kernel_input<T, T>(call, q.data(), k.data(), v.data()), buffers.output(call), call.threads);
    return std::move(buffers).result(stats);
}

// Where the backward's outputs are written, in T (row-major, heads side by side).
template <typename T>
struct BackwardBuffers {
    T *out, *delta, *grad_q, *grad_k, *grad_v;
};

// The nan empty-row policy (docs/PROBLEM.md#scale-softcap-empty-rows) on the kernel's
// zero-policy result: a row that reads no key has NaN weights in the step-by-step
// backward, so its out, delta and dQ row are NaN, and, summed over every query row,
// all of dK and dV of the KV head it reads (what torch.autograd gives through a NaN row).
template <typename T>
void spread_empty_rows_nan(const AttentionCall& call, const std::vector<T>& lse, const BackwardBuffers<T>& to) {
    const std::size_t n = call.n(), m = call.m(), heads = static_cast<std::size_t>(call.heads), kv_heads = static_cast<std::size_t>(call.kv_heads);
    const std::size_t group = heads / kv_heads;
    constexpr T nan = std::numeric_limits<T>::quiet_NaN();
    std::vector<bool> kv_nan(kv_heads, false);
    for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t i = 0; i < n; ++i) {
            if (lse[h * n + i] != -std::numeric_limits<T>::infinity()) continue;
            std::fill_n(to.out + i * heads * call.d_v + h * call.d_v, call.d_v, nan);
            to.delta[h * n + i] = nan;
            std::fill_n(to.grad_q + i * heads * call.d_k + h * call.d_k, call.d_k, nan);
            kv_nan[h / group] = true;
        }
    for (std::size_t g = 0; g < kv_heads; ++g) {
        if (!kv_nan[g]) continue;
        for (std::size_t j = 0; j < m; ++j) {
            std::fill_n(to.grad_k + j * kv_heads * call.d_k + g * call.d_k, call.d_k, nan);
            std::fill_n(to.grad_v + j * kv_heads * call.d_v + g * call.d_v, call.d_v, nan);
        }
    }
}

// The backward's outputs in T, turned into matrices.
template <typename T>
AttentionGradients fused_backward(const AttentionCall& call, const Matrix& d_out) {
    const std::size_t n = call.n(), m = call.m(), heads = static_cast<std::size_t>(call.heads), kv_heads = static_cast<std::size_t>(call.kv_heads);
    if (d_out.rows() != n || d_out.cols() < heads * call.d_v)
        throw InputError(fmt::format("the upstream gradient of the fused backward is ({}, {}); it must be (n, ≥ H·d_v) = ({}, {})", d_out.rows(),
                                     d_out.cols(), n, heads * call.d_v));
    std::vector<T> out(n * heads * call.d_v), lse(heads * n), delta(heads * n), grad_q(n * heads * call.d_k), grad_k(m * kv_heads * call.d_k),
        grad_v(m * kv_heads * call.d_v);
    FlashBackwardSettings settings;
    settings.threads = call.threads;
    if (call.block_q) settings.block_q = call.block_q;
    if (call.block_k) settings.block_k = call.block_k;
    const auto input = kernel_input<T, double>(call, call.q->data().data(), call.k->data().data(), call.v->data().data());
    const FlashBackwardOutput<T> output{out.data(), lse.data(), delta.data(), grad_q.data(), grad_k.data(), grad_v.data()};
    AttentionGradients g;
    g.stats = flash_backward(input, d_out.data().data(), d_out.cols(), output, settings);
    if (call.empty_rows_nan) spread_empty_rows_nan(call, lse, {out.data(), delta.data(), grad_q.data(), grad_k.data(), grad_v.data()});
    const auto matrix = [](std::size_t rows, std::size_t cols, const std::vector<T>& values) {
        Matrix x(rows, cols);
        std::copy(values.begin(), values.end(), x.data().begin());
        return x;
    };
    g.out = matrix(n, heads * call.d_v, out);
    g.lse = matrix(heads, n, lse);
    g.delta = matrix(heads, n, delta);
    g.grad_q = matrix(n, heads * call.d_k, grad_q);
    g.grad_k = matrix(m, kv_heads * call.d_k, grad_k);
    g.grad_v = matrix(m, kv_heads * call.d_v, grad_v);
    return g;
}

// Why the fused backward cannot take this call, or "".
std::string backward_refusal(const AttentionCall& call) {
    if (call.dtype != Dtype::f32 && call.dtype != Dtype::f64) return "it computes in f32 or f64 only";
    if (call.softcap) return "it has no softcap";
    if (call.mask && call.mask->has_elementwise())
        return "it masks by each row's key range only (causal, window, lengths), not by key_valid, dense masks, ALiBi or sparse patterns";
    return "";
}

// The call's q, k and v as T: the float copies the caller holds, or rounded copies made here.
template <typename T>
struct DecodeOperands {
    std::vector<T> q, k, v;
    const T* pointer(const Matrix& x, const float* given, std::vector<T>& copy) {
        if constexpr (std::is_same_v<T, float>)
            if (given) return given;
        if constexpr (std::is_same_v<T, double>) return x.data().data();
        copy.assign(x.data().begin(), x.data().end());
        return copy.data();
    }
};

template <typename T>
AttentionResult decode(const AttentionCall& call) {
    DecodeOperands<T> operands;
    const T* q = operands.pointer(*call.q, call.q_f32, operands.q);
    const T* k = operands.pointer(*call.k, call.k_f32, operands.k);
    const T* v = operands.pointer(*call.v, call.v_f32, operands.v);
    const FastAttentionInput<T> input = kernel_input<T, T>(call, q, k, v);
    std::vector<T> out(static_cast<std::size_t>(call.heads) * call.d_v);
    const AttentionStats stats = decode_attention(input, out.data(), DecodeSettings{call.threads, call.decode_chunk});
    AttentionResult r{Matrix(1, out.size()), Matrix(), Matrix(), stats};
    std::copy(out.begin(), out.end(), r.out.data().begin());
    return r;
}

// What the decode kernel does not take, in words; empty when it takes the call.
std::string decode_refusal(const AttentionCall& call) {
    if (call.n() != 1) return "it takes one query per head (n = 1), found n = " + std::to_string(call.n());
    if (call.m() == 0) return "it needs a cache of at least one token";
    if (call.mask || call.softcap) return "it takes no mask and no softcap (every cached key is visible)";
    if (call.q->cols() != static_cast<std::size_t>(call.heads) * call.d_k) return "its query row must hold exactly H·d_k values";
    return "";
}

}  // namespace

bool CpuBackend::supports(Operation op, const AttentionCall* call, std::string& why) const {
    if (op == Operation::tensor_core_attention) {
        why = "it has no tensor cores (the tensor-core kernel is the cuda backend's)";
        return false;
    }
    if (op == Operation::fused_attention_backward) {
        why = call ? backward_refusal(*call) : "";
        return why.empty();
    }
    if (op == Operation::decode_attention && call) {
        why = decode_refusal(*call);
        return why.empty();
    }
    if (op != Operation::unfused_attention) return true;  // the fused kernel takes every mask, dtype and width
    // What the call asks for first, then whether this machine has OpenBLAS: the first
    // answer is the same everywhere.
    if (call && (call->softcap || (call->mask && (!call->mask->dense.empty() || !call->mask->alibi_slopes.empty())))) {
        why = "the unfused baseline masks by key ranges and key_valid only (no softcap, ALiBi, dense masks or sparse patterns)";
        return false;
    }
    if (call && (call->n() == 0 || call->m() == 0)) {
        why = "the unfused baseline needs n ≥ 1 and m ≥ 1";
        return false;
    }
    return blas_available(why);
}

AttentionResult CpuBackend::fused_attention(const AttentionCall& call) const {
    return call.dtype == Dtype::f32 ? fused<float>(call) : fused<double>(call);
}

AttentionResult CpuBackend::unfused_attention(const AttentionCall& call) const {
    return call.dtype == Dtype::f32 ? unfused<float>(call) : unfused<double>(call);
}

AttentionGradients CpuBackend::fused_attention_backward(const AttentionCall& call, const Matrix& d_out) const {
    return call.dtype == Dtype::f32 ? fused_backward<float>(call, d_out) : fused_backward<double>(call, d_out);
}

AttentionResult CpuBackend::decode_attention(const AttentionCall& call) const {
    return call.dtype == Dtype::f32 ? decode<float>(call) : decode<double>(call);
}

AttentionResult CpuBackend::tensor_core_attention(const AttentionCall&) const {
    throw BackendUnavailable("the cpu backend has no tensor-core attention");
}

}  // namespace attn_trace
