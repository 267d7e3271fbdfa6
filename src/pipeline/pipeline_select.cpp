#include <fmt/format.h>

#include "attn_trace/check.hpp"
#include "attn_trace/errors.hpp"

namespace attn_trace {

Trace compute_trace(const std::string& command, const Problem& problem, const RunOptions& options) {
    if (command == "run") return pipeline_full(problem, options);
    throw InputError(fmt::format("{}: the {} pipeline is not part of this build yet", problem.file, command));
}

}  // namespace attn_trace
