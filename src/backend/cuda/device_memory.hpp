#pragma once
// Device memory for the CUDA kernels (both .cu files): a buffer that frees itself,
// the copies to and from the host, and the error check that turns a failed CUDA
// call into BackendUnavailable. CUDA-only: included from .cu files.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn_trace/errors.hpp"
#include "attn_trace/matrix.hpp"

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

}  // namespace attn_trace
