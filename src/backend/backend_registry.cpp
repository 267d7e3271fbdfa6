// The one place that knows which backends were built in.
#include <fmt/format.h>

#include "attn_trace/backend.hpp"
#include "attn_trace/errors.hpp"
#include "cpu/backend_cpu.hpp"

namespace attn_trace {

std::unique_ptr<Backend> make_backend(const std::string& name) {
    if (name == "cpu") return std::make_unique<CpuBackend>();
    if (name == "cuda")
        throw BackendUnavailable("--backend cuda: this build has no CUDA backend (configure with -DATTN_TRACE_CUDA=ON on a machine with nvcc)");
    throw InputError(fmt::format("--backend: expected cpu or cuda, found '{}'", name));
}

}  // namespace attn_trace
