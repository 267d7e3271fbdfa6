#pragma once
// Device memory for the CUDA kernels (both .cu files): a buffer that frees itself,
// the copies to and from the host, the error check that turns a failed CUDA call
// into BackendUnavailable, and an attention call's buffers as both fused kernels
// read and write them. CUDA-only: included from .cu files.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn_trace/backend.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/matrix.hpp"
#include "backend/row_key_ranges.hpp"

namespace attn_trace {

inline void check_cuda(cudaError_t status, const char* what) {
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
    // A host vector of another length is a bug in the caller (it would read past its end
    // or leave device memory unset): an internal error, not a copy.
    void upload(const std::vector<T>& host) {
        if (host.size() != count_)
            throw std::logic_error("DeviceBuffer::upload: " + std::to_string(host.size()) + " values for a buffer of " + std::to_string(count_));
        check_cuda(cudaMemcpy(data_, host.data(), count_ * sizeof(T), cudaMemcpyHostToDevice), "upload");
    }
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

// An attention call on the device: Q, K and V as In (`convert` turns each Matrix into
// a std::vector<In>), each query row's key range [first_key, end_key), and the
// float32 outputs out (n, H·d_v), row_max and row_sum (H, n).
template <typename In>
struct DeviceCall {
    DeviceBuffer<In> q, k, v;
    DeviceBuffer<int> first_key, end_key;
    DeviceBuffer<float> out, row_max, row_sum;

    template <typename Convert>
    DeviceCall(const AttentionCall& call, Convert convert)
        : q(call.q->data().size()), k(call.k->data().size()), v(call.v->data().size()), first_key(call.n()), end_key(call.n()),
          out(call.n() * static_cast<std::size_t>(call.heads) * call.d_v), row_max(static_cast<std::size_t>(call.heads) * call.n()),
          row_sum(static_cast<std::size_t>(call.heads) * call.n()), n_(call.n()), heads_(static_cast<std::size_t>(call.heads)), d_v_(call.d_v) {
        q.upload(convert(*call.q));
        k.upload(convert(*call.k));
        v.upload(convert(*call.v));
        const RowKeyRanges ranges = row_key_ranges(call);
        first_key.upload(ranges.first);
        end_key.upload(ranges.end);
    }

    // out, row_max and row_sum back on the host; the caller adds the kernel's stats.
    AttentionResult result() const {
        AttentionResult result;
        result.out = to_matrix(out.download(), n_, heads_ * d_v_);
        result.row_max = to_matrix(row_max.download(), heads_, n_);
        result.row_sum = to_matrix(row_sum.download(), heads_, n_);
        return result;
    }

private:
    std::size_t n_, heads_, d_v_;
};

}  // namespace attn_trace
