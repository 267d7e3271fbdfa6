#pragma once
// OpenBLAS, opened the first time bench's naive baseline needs it rather than linked:
// loading libopenblas costs about 15 ms of wall time (measured: an empty program
// linked to it starts in 20 ms instead of 5), three times what a whole
// `attn-trace run` of a small problem takes, and only bench's naive baseline
// (naive_attention.cpp) uses it. It is optional at build time: without
// libopenblas-dev the baseline reports itself unavailable (exit 3).
#include <cstddef>
#include <string>

namespace attn_trace {

// Opens the library once (single-threaded: its own threads would compete with
// the kernel's workers). Throws BackendUnavailable when the build has no OpenBLAS
// or the library cannot be opened.
void require_blas();
// The same as a question: false, with the reason in `why`, where require_blas would throw.
bool blas_available(std::string& why);

// C (rows, cols) = alpha · A (rows, inner) · op(B), row-major, where op(B) = Bᵀ
// with B stored (cols, inner) when transpose_b, else B (inner, cols): sgemm, dgemm.
void blas_gemm(bool transpose_b, std::size_t rows, std::size_t cols, std::size_t inner, float alpha, const float* a, std::size_t lda,
               const float* b, std::size_t ldb, float* c, std::size_t ldc);
void blas_gemm(bool transpose_b, std::size_t rows, std::size_t cols, std::size_t inner, double alpha, const double* a, std::size_t lda,
               const double* b, std::size_t ldb, double* c, std::size_t ldc);

}  // namespace attn_trace
