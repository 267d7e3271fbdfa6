#include "blas_library.hpp"

#include <string>

#include "attn_trace/errors.hpp"

#ifdef ATTN_TRACE_OPENBLAS_LIBRARY
#include <cblas.h>
#include <cstdlib>
#include <dlfcn.h>
#endif

namespace attn_trace {

#ifdef ATTN_TRACE_OPENBLAS_LIBRARY

namespace {

struct BlasLibrary {
    decltype(&cblas_sgemm) sgemm = nullptr;
    decltype(&cblas_dgemm) dgemm = nullptr;
};

BlasLibrary open_blas_library() {
    // One OpenBLAS thread: the naive baseline runs one worker per core, each
    // calling BLAS on its own rows. Set before loading, so that the library does not start a
    // thread pool it will never use.
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    // The library found at configure time (whose cblas.h we compiled against),
    // else the runtime package's name.
    void* handle = dlopen(ATTN_TRACE_OPENBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) handle = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr)
        throw BackendUnavailable(std::string("the unfused baseline needs OpenBLAS (Debian: libopenblas0) and cannot open it: ") + dlerror());
    BlasLibrary blas;
    blas.sgemm = reinterpret_cast<decltype(blas.sgemm)>(dlsym(handle, "cblas_sgemm"));
    blas.dgemm = reinterpret_cast<decltype(blas.dgemm)>(dlsym(handle, "cblas_dgemm"));
    const auto set_threads = reinterpret_cast<decltype(&openblas_set_num_threads)>(dlsym(handle, "openblas_set_num_threads"));
    if (blas.sgemm == nullptr || blas.dgemm == nullptr || set_threads == nullptr)
        throw BackendUnavailable(std::string("the OpenBLAS library lacks cblas_sgemm, cblas_dgemm or openblas_set_num_threads: ") + ATTN_TRACE_OPENBLAS_LIBRARY);
    set_threads(1);  // in case it was loaded before, with more
    return blas;
}

const BlasLibrary& blas_library() {
    static const BlasLibrary blas = open_blas_library();  // thread-safe, once
    return blas;
}

}  // namespace

void require_blas() { (void)blas_library(); }

void blas_gemm(bool transpose_b, std::size_t rows, std::size_t cols, std::size_t inner, float alpha, const float* a, std::size_t lda,
               const float* b, std::size_t ldb, float* c, std::size_t ldc) {
    blas_library().sgemm(CblasRowMajor, CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans, static_cast<int>(rows), static_cast<int>(cols),
                         static_cast<int>(inner), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), 0.0f, c, static_cast<int>(ldc));
}

void blas_gemm(bool transpose_b, std::size_t rows, std::size_t cols, std::size_t inner, double alpha, const double* a, std::size_t lda,
               const double* b, std::size_t ldb, double* c, std::size_t ldc) {
    blas_library().dgemm(CblasRowMajor, CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans, static_cast<int>(rows), static_cast<int>(cols),
                         static_cast<int>(inner), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), 0.0, c, static_cast<int>(ldc));
}

#else

// Built without libopenblas-dev: the naive baseline is unavailable, as a backend
// without a GPU is; everything else works.
void require_blas() {
    throw BackendUnavailable("the unfused baseline needs OpenBLAS, and this build has none: install libopenblas-dev (Debian) and rebuild");
}
void blas_gemm(bool, std::size_t, std::size_t, std::size_t, float, const float*, std::size_t, const float*, std::size_t, float*, std::size_t) {
    require_blas();
}
void blas_gemm(bool, std::size_t, std::size_t, std::size_t, double, const double*, std::size_t, const double*, std::size_t, double*, std::size_t) {
    require_blas();
}

#endif

bool blas_available(std::string& why) {
    try {
        require_blas();
        return true;
    } catch (const BackendUnavailable& error) {
        why = error.what();
        return false;
    }
}

}  // namespace attn_trace
