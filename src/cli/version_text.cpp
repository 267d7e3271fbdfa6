#include "version_text.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "attn_trace/backend.hpp"
#include "attn_trace/cpu_kernel.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/version.hpp"

namespace attn_trace::cli {

namespace {

// The kernel in use, what the binary holds and what this CPU runs (a bad
// ATTN_TRACE_KERNEL is reported here, not thrown: --version always answers).
std::string cpu_line() {
    std::string in_use;
    try {
        const std::string target = kernel_target();
        const char* forced = std::getenv("ATTN_TRACE_KERNEL");
        in_use = fmt::format("{} ({}){}", target, kernel_target_description(target),
                             forced && *forced ? ", as ATTN_TRACE_KERNEL asks" : ", the best this CPU runs");
    } catch (const InputError& error) {
        in_use = error.what();
    }
    return fmt::format("CPU kernel: {}; compiled for {}; this CPU runs {}", in_use, fmt::join(compiled_kernel_target_names(), ", "),
                       fmt::join(supported_kernel_target_names(), ", "));
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
