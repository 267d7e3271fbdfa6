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
#include "backend_cuda.hpp"

namespace attn_trace {

namespace {

void check_cuda(cudaError_t status, const char* what) {
    if (status != cudaSuccess) throw BackendUnavailable(std::string("CUDA: ") + what + " failed: " + cudaGetErrorString(status));
}

// Device memory that frees itself.
template <typename T>
class DeviceBuffer {
public:
    explicit DeviceBuffer(std::size_t count) : count_(count) { check_cuda(cudaMalloc(&data_, std::max<std::size_t>(1, count) * sizeof(T)), "cudaMalloc"); }
    ~DeviceBuffer() { cudaFree(data_); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    T* get() const { return data_; }
    void upload(const std::vector<T>& host) { check_cuda(cudaMemcpy(data_, host.data(), count_ * sizeof(T), cudaMemcpyHostToDevice), "upload"); }
    std::vector<T> download() const {
        std::vector<T> host(count_);
        check_cuda(cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost), "download");
        return host;
    }

private:
    T* data_ = nullptr;
    std::size_t count_;
};

template <typename T>
std::vector<T> to_host_vector(const Matrix& m) {
    return std::vector<T>(m.data().begin(), m.data().end());
}

template <typename T>
Matrix to_matrix(const std::vector<T>& data, std::size_t rows, std::size_t cols) {
    Matrix out(rows, cols);
    for (std::size_t i = 0; i < data.size(); ++i) out.data()[i] = static_cast<double>(data[i]);
    return out;
}

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
// shared-memory tile; head widths up to max_width.
constexpr int Br = 64;
constexpr int Bc = 32;
constexpr int max_width = 128;

__global__ void fused_attention_kernel(const float* q, const float* k, const float* v, float* out, int n, int m, int d, int dv,
                                       float scale, long causal_offset) {
    extern __shared__ float shared[];
    float* k_tile = shared;            // (Bc, d)
    float* v_tile = shared + Bc * d;   // (Bc, dv)
    const int i = blockIdx.x * Br + threadIdx.x;
    float q_row[max_width], u[max_width];
    for (int c = 0; c < d; ++c) q_row[c] = i < n ? q[i * d + c] : 0.0f;
    for (int c = 0; c < dv; ++c) u[c] = 0.0f;
    float m_i = -INFINITY, l_i = 0.0f;  // running max and running sum of row i
    // The last key any row of this block may read: tiles after it are skipped whole.
    const long block_last_row = min(static_cast<long>(blockIdx.x) * Br + Br - 1, static_cast<long>(n) - 1);
    const long last_key = causal_offset < 0 ? m - 1 : min(static_cast<long>(m) - 1, block_last_row + causal_offset);
    for (int j0 = 0; j0 <= last_key; j0 += Bc) {
        for (int t = threadIdx.x; t < Bc * d; t += blockDim.x) k_tile[t] = j0 + t / d < m ? k[j0 * d + t] : 0.0f;
        for (int t = threadIdx.x; t < Bc * dv; t += blockDim.x) v_tile[t] = j0 + t / dv < m ? v[j0 * dv + t] : 0.0f;
        __syncthreads();
        if (i < n) {
            for (int jj = 0; jj < Bc && j0 + jj < m; ++jj) {
                if (causal_offset >= 0 && j0 + jj > i + causal_offset) break;
                float s = 0.0f;
                for (int c = 0; c < d; ++c) s += q_row[c] * k_tile[jj * d + c];
                s *= scale;
                // m' = max(m, s); ℓ' = ℓ·e^(m − m') + e^(s − m'); u' = u·e^(m − m') + e^(s − m')·v_j
                const float m_new = fmaxf(m_i, s);
                const float rescale = expf(m_i - m_new);  // e^(−inf) = 0 on the first key
                const float p = expf(s - m_new);
                l_i = l_i * rescale + p;
                for (int c = 0; c < dv; ++c) u[c] = u[c] * rescale + p * v_tile[jj * dv + c];
                m_i = m_new;
            }
        }
        __syncthreads();
    }
    if (i < n)
        for (int c = 0; c < dv; ++c) out[i * dv + c] = l_i > 0.0f ? u[c] / l_i : 0.0f;
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
    return dtype == Dtype::f32 ? product_on_device<float>(a, b, false) : product_on_device<double>(a, b, false);
}

Matrix CudaBackend::multiply_transposed(const Matrix& a, const Matrix& b, Dtype dtype) const {
    return dtype == Dtype::f32 ? product_on_device<float>(a, b, true) : product_on_device<double>(a, b, true);
}

std::optional<Matrix> CudaBackend::fused_attention(const Matrix& q, const Matrix& k, const Matrix& v, double scale, long causal_offset) const {
    const int n = static_cast<int>(q.rows()), m = static_cast<int>(k.rows()), d = static_cast<int>(q.cols()), dv = static_cast<int>(v.cols());
    if (d > max_width || dv > max_width)
        throw InputError("the CUDA fused kernel takes head widths up to " + std::to_string(max_width) + ", found d_k = " + std::to_string(d) +
                         ", d_v = " + std::to_string(dv));
    DeviceBuffer<float> dq(q.data().size()), dk(k.data().size()), dv_buffer(v.data().size()), dout(static_cast<std::size_t>(n) * dv);
    dq.upload(to_host_vector<float>(q));
    dk.upload(to_host_vector<float>(k));
    dv_buffer.upload(to_host_vector<float>(v));
    const std::size_t shared_bytes = static_cast<std::size_t>(Bc) * (d + dv) * sizeof(float);
    fused_attention_kernel<<<(n + Br - 1) / Br, Br, shared_bytes>>>(dq.get(), dk.get(), dv_buffer.get(), dout.get(), n, m, d, dv,
                                                                   static_cast<float>(scale), causal_offset);
    check_cuda(cudaGetLastError(), "fused_attention_kernel launch");
    check_cuda(cudaDeviceSynchronize(), "fused_attention_kernel");
    return to_matrix(dout.download(), static_cast<std::size_t>(n), static_cast<std::size_t>(dv));
}

}  // namespace attn_trace
