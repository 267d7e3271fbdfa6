// CUDA kernels, each naming its CPU twin. Version 1 of each, kept simple on
// purpose: a shared-memory tiled matrix product, and a fused attention kernel in
// the style of flash-attention-minimal (one thread per query row, K and V tiles
// in shared memory, the running max m and sum ℓ of the online softmax).
// No fmt in this file: nvcc cannot evaluate fmt's compile-time format checks.
#include <cuda_runtime.h>

#include <cmath>
#include <vector>

#include <string>

#include "attn_trace/errors.hpp"
#include "attn_trace/online_softmax.hpp"
#include "backend/row_key_ranges.hpp"
#include "backend_cuda.hpp"
#include "device_memory.hpp"
#include "tensor_core_tiling.hpp"

namespace attn_trace {

namespace {

constexpr int product_tile = 16;

// c (n, m) = a (n, k) · b, where b is (k, m), or (m, k) read transposed.
// CPU twin: CpuBackend::multiply / multiply_transposed (accumulates in T too).
template <typename T>
__global__ void product_kernel(const T* a, const T* b, T* c, int n, int k, int m, bool b_transposed) {
    __shared__ T a_tile[product_tile][product_tile];
    __shared__ T b_tile[product_tile][product_tile];
    const int row = blockIdx.y * product_tile + threadIdx.y;
    const int col = blockIdx.x * product_tile + threadIdx.x;
    T sum = 0;
    for (int t0 = 0; t0 < k; t0 += product_tile) {
        const int ta = t0 + threadIdx.x, tb = t0 + threadIdx.y;
        a_tile[threadIdx.y][threadIdx.x] = (row < n && ta < k) ? a[row * k + ta] : T(0);
        b_tile[threadIdx.y][threadIdx.x] = (col < m && tb < k) ? (b_transposed ? b[col * k + tb] : b[tb * m + col]) : T(0);
        __syncthreads();
        for (int t = 0; t < product_tile; ++t) sum += a_tile[threadIdx.y][t] * b_tile[t][threadIdx.x];
        __syncthreads();
    }
    if (row < n && col < m) c[row * m + col] = sum;
}

template <typename T>
Matrix product_on_device(const Matrix& a, const Matrix& b, bool b_transposed) {
    const int n = static_cast<int>(a.rows()), k = static_cast<int>(a.cols());
    const int m = static_cast<int>(b_transposed ? b.rows() : b.cols());
    DeviceBuffer<T> da(a.data().size()), db(b.data().size()), dc(static_cast<std::size_t>(n) * m);
    da.upload(to_host_vector<T>(a));
    db.upload(to_host_vector<T>(b));
    const dim3 threads(product_tile, product_tile);
    const dim3 blocks((m + product_tile - 1) / product_tile, (n + product_tile - 1) / product_tile);
    product_kernel<T><<<blocks, threads>>>(da.get(), db.get(), dc.get(), n, k, m, b_transposed);
    check_cuda(cudaGetLastError(), "product_kernel launch");
    check_cuda(cudaDeviceSynchronize(), "product_kernel");
    return to_matrix(dc.download(), static_cast<std::size_t>(n), static_cast<std::size_t>(m));
}

// Fused attention, float32. Br query rows per block (one thread each), Bc keys per
// shared-memory tile; head widths up to max_width. One head per launch: q, k, v
// point at the head's first column and are read with their matrices' row strides.
// Row i reads keys [first_key[i], end_key[i]); tiles outside every row's range of
// the block are not loaded. Writes out (n, dv) with stride out_stride, and the
// final m and ℓ of each row (CPU twin: fast_attention.cpp's row_max and row_sum).
constexpr int Br = 64;
constexpr int Bc = 32;
constexpr int max_width = 128;

struct HeadArguments {
    const float *q, *k, *v;
    int q_stride, k_stride, v_stride, out_stride;
    float* out;
    float *row_max, *row_sum;  // (n) each, for this head
    const int *first_key, *end_key;  // (n) each
    int n, m, d, dv;
    float scale, empty_value;
};

__global__ void fused_attention_kernel(HeadArguments a) {
    extern __shared__ float shared[];
    float* k_tile = shared;              // (Bc, d)
    float* v_tile = shared + Bc * a.d;   // (Bc, dv)
    const int i = blockIdx.x * Br + threadIdx.x;
    float q_row[max_width], u[max_width];
    for (int c = 0; c < a.d; ++c) q_row[c] = i < a.n ? a.q[static_cast<long>(i) * a.q_stride + c] : 0.0f;
    for (int c = 0; c < a.dv; ++c) u[c] = 0.0f;
    float m_i = -INFINITY, l_i = 0.0f;  // running max and running sum of row i
    const int first = i < a.n ? a.first_key[i] : 0, end = i < a.n ? a.end_key[i] : 0;
    // The keys any row of this block may read: tiles outside them are skipped whole.
    const int block_first_row = blockIdx.x * Br, block_last_row = min(block_first_row + Br, a.n) - 1;
    int block_first = a.m, block_end = 0;
    for (int r = block_first_row; r <= block_last_row; ++r) {
        block_first = min(block_first, a.first_key[r]);
        block_end = max(block_end, a.end_key[r]);
    }
    for (int j0 = block_first - block_first % Bc; j0 < block_end; j0 += Bc) {
        for (int t = threadIdx.x; t < Bc * a.d; t += blockDim.x)
            k_tile[t] = j0 + t / a.d < a.m ? a.k[static_cast<long>(j0 + t / a.d) * a.k_stride + t % a.d] : 0.0f;
        for (int t = threadIdx.x; t < Bc * a.dv; t += blockDim.x)
            v_tile[t] = j0 + t / a.dv < a.m ? a.v[static_cast<long>(j0 + t / a.dv) * a.v_stride + t % a.dv] : 0.0f;
        __syncthreads();
        if (i < a.n) {
            for (int jj = 0; jj < Bc; ++jj) {
                const int j = j0 + jj;
                if (j < first || j >= end) continue;
                float s = 0.0f;
                for (int c = 0; c < a.d; ++c) s += q_row[c] * k_tile[jj * a.d + c];
                s *= a.scale;
                // The update of online_softmax.hpp with a tile of one key.
                const float m_new = online_softmax::raised_max(m_i, s);
                const float rescale = online_softmax::rescale(m_i, m_new);
                const float p = online_softmax::weight(s, m_new);
                l_i = online_softmax::rescaled_sum(l_i, rescale, p);
                for (int c = 0; c < a.dv; ++c) u[c] = online_softmax::rescaled_sum(u[c], rescale, p * v_tile[jj * a.dv + c]);
                m_i = m_new;
            }
        }
        __syncthreads();
    }
    if (i < a.n) {
        for (int c = 0; c < a.dv; ++c) a.out[static_cast<long>(i) * a.out_stride + c] = l_i > 0.0f ? u[c] / l_i : a.empty_value;
        a.row_max[i] = m_i;
        a.row_sum[i] = l_i;
    }
}

}  // namespace

bool cuda_device_available(std::string& why) {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
        why = std::string("no usable CUDA device (") + cudaGetErrorString(status) + ")";
        return false;
    }
    if (count == 0) {
        why = "no CUDA device found";
        return false;
    }
    return true;
}

Matrix CudaBackend::multiply(const Matrix& a, const Matrix& b, Dtype dtype) const {
    // A half type: the product in f32 on the device, each sum rounded to the half type once.
    return rounded(compute_dtype(dtype) == Dtype::f32 ? product_on_device<float>(a, b, false) : product_on_device<double>(a, b, false), dtype);
}

Matrix CudaBackend::multiply_transposed(const Matrix& a, const Matrix& b, Dtype dtype) const {
    return rounded(compute_dtype(dtype) == Dtype::f32 ? product_on_device<float>(a, b, true) : product_on_device<double>(a, b, true), dtype);
}

bool CudaBackend::supports(Operation op, const AttentionCall* call, std::string& why) const {
    if (op == Operation::multiply || op == Operation::multiply_transposed) return true;
    if (op == Operation::unfused_attention) {
        why = "it has no unfused attention (the baseline is the CPU's)";
        return false;
    }
    if (op == Operation::fused_attention_backward) {
        why = "it has no fused backward yet (the CPU's is FlashAttention-2's)";
        return false;
    }
    if (op == Operation::decode_attention) {
        why = "it has no decode kernel (its fused attention takes n = 1)";
        return false;
    }
    if (!call) return true;
    if (op == Operation::tensor_core_attention) return tensor_cores::takes(*call, why);
    const bool widths = call->d_k <= max_width && call->d_v <= max_width;
    return range_kernel_takes(*call, "its fused kernel",
                              widths ? "" : "takes head widths up to " + std::to_string(max_width) + ", found d_k = " + std::to_string(call->d_k) +
                                                ", d_v = " + std::to_string(call->d_v),
                              why);
}

AttentionResult CudaBackend::fused_attention(const AttentionCall& call) const {
    const int n = static_cast<int>(call.n()), m = static_cast<int>(call.m()), d = static_cast<int>(call.d_k), dv = static_cast<int>(call.d_v);
    const int heads = call.heads, group = call.heads / call.kv_heads;
    const int out_stride = heads * dv;
    const DeviceCall<float> device(call, to_host_vector<float>);
    const std::size_t shared_bytes = static_cast<std::size_t>(Bc) * (d + dv) * sizeof(float);
    for (int h = 0; h < heads; ++h) {
        const int g = h / group;
        HeadArguments a{device.q.get() + h * d, device.k.get() + g * d, device.v.get() + g * dv,
                        static_cast<int>(call.q->cols()), static_cast<int>(call.k->cols()), static_cast<int>(call.v->cols()), out_stride,
                        device.out.get() + h * dv, device.row_max.get() + static_cast<long>(h) * n, device.row_sum.get() + static_cast<long>(h) * n,
                        device.first_key.get(), device.end_key.get(), n, m, d, dv, static_cast<float>(call.scale),
                        call.empty_rows_nan ? NAN : 0.0f};
        fused_attention_kernel<<<(n + Br - 1) / Br, Br, shared_bytes>>>(a);
        check_cuda(cudaGetLastError(), "fused_attention_kernel launch");
    }
    check_cuda(cudaDeviceSynchronize(), "fused_attention_kernel");
    AttentionResult result = device.result();
    result.stats.workers = 1;
    result.stats.block_q = Br;
    result.stats.block_k = Bc;
    result.stats.score_bytes_held = 0;  // one score per thread, in registers
    return result;
}

AttentionResult CudaBackend::unfused_attention(const AttentionCall&) const {
    throw BackendUnavailable("the cuda backend has no unfused attention");
}

AttentionGradients CudaBackend::fused_attention_backward(const AttentionCall&, const Matrix&) const {
    throw BackendUnavailable("the cuda backend has no fused attention backward");
}

}  // namespace attn_trace
