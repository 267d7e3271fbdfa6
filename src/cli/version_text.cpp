#include "version_text.hpp"

#include <fmt/format.h>

#include "attn_trace/backend.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/version.hpp"

namespace attn_trace::cli {

namespace {

std::string cpu_line() {
#if ATTN_TRACE_NATIVE_KERNEL
    const char* kernel = "the fast path's micro-kernels compiled with -march=native (for CPUs like the building one)";
#else
    const char* kernel = "the fast path's micro-kernels compiled for baseline x86-64";
#endif
#if defined(__x86_64__)
    const auto has = [](bool yes) { return yes ? "yes" : "no"; };
    return fmt::format("CPU kernel: {}; this CPU: AVX2 {}, FMA {}, AVX-512F {}", kernel, has(__builtin_cpu_supports("avx2")), has(__builtin_cpu_supports("fma")),
                       has(__builtin_cpu_supports("avx512f")));
#else
    return fmt::format("CPU kernel: {}", kernel);
#endif
}

std::string cuda_line() {
    try {
        (void)make_backend("cuda");
        return "CUDA: built in, and a GPU is usable";
    } catch (const BackendUnavailable& e) {
        const std::string why = e.what(), after = "cuda: ";
        const auto at = why.find(after);
        return "CUDA: " + (at == std::string::npos ? why : why.substr(at + after.size()));
    }
}

}  // namespace

std::string version_text() {
    return fmt::format("attn-trace {}\nbuild: {}\n{}\n{}", version, ATTN_TRACE_BUILD_TYPE, cpu_line(), cuda_line());
}

}  // namespace attn_trace::cli
