#include "blas_library.hpp"

#include <cstdlib>
#include <dlfcn.h>
#include <string>

#include "attn_trace/errors.hpp"

namespace attn_trace {

namespace {

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
        throw BackendUnavailable(std::string("bench --impl naive needs OpenBLAS (Debian: libopenblas0) and cannot open it: ") + dlerror());
    BlasLibrary blas;
    blas.sgemm = reinterpret_cast<decltype(blas.sgemm)>(dlsym(handle, "cblas_sgemm"));
    blas.dgemm = reinterpret_cast<decltype(blas.dgemm)>(dlsym(handle, "cblas_dgemm"));
    const auto set_threads = reinterpret_cast<decltype(&openblas_set_num_threads)>(dlsym(handle, "openblas_set_num_threads"));
    if (blas.sgemm == nullptr || blas.dgemm == nullptr || set_threads == nullptr)
        throw BackendUnavailable(std::string("the OpenBLAS library lacks cblas_sgemm, cblas_dgemm or openblas_set_num_threads: ") + ATTN_TRACE_OPENBLAS_LIBRARY);
    set_threads(1);  // in case it was loaded before, with more
    return blas;
}

}  // namespace

const BlasLibrary& blas_library() {
    static const BlasLibrary blas = open_blas_library();  // thread-safe, once
    return blas;
}

}  // namespace attn_trace
