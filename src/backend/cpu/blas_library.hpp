#pragma once
// OpenBLAS, opened the first time bench's naive baseline needs it rather than linked:
// loading libopenblas costs about 15 ms of wall time (measured: an empty program
// linked to it starts in 20 ms instead of 5), three times what a whole
// `attn-trace run` of a small problem takes, and only bench's naive baseline
// (naive_attention.cpp) uses it.
#include <cblas.h>

namespace attn_trace {

struct BlasLibrary {
    decltype(&cblas_sgemm) sgemm = nullptr;
    decltype(&cblas_dgemm) dgemm = nullptr;
};

// Opens the library once (single-threaded: its own threads would compete with
// the kernel's workers) and returns its functions. Throws BackendUnavailable
// when it cannot be opened.
const BlasLibrary& blas_library();

}  // namespace attn_trace
