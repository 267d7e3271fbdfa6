#pragma once
// ATTN_TRACE_HOST_DEVICE marks a function that the CUDA kernels call as well as host
// code: __host__ __device__ where nvcc compiles it, nothing for a C++ compiler. The
// header that uses it must then be C++17 with no library call a kernel cannot make
// (nvcc compiles the backend's .cu files as C++17).
#ifdef __CUDACC__
#define ATTN_TRACE_HOST_DEVICE __host__ __device__
#else
#define ATTN_TRACE_HOST_DEVICE
#endif
