#include <fmt/format.h>

#include "attn_trace/pipeline.hpp"
#include "attn_trace/errors.hpp"

namespace attn_trace {

Trace compute_trace(const std::string& command, const Problem& problem, const RunOptions& options, const DecodeOptions& decode,
                    const TiledOptions& tiled, const GradOptions& grad) {
    if (command == "run") return pipeline_full(problem, options);
    if (command == "decode") return pipeline_decode(problem, options, decode);
    if (command == "tiled") return pipeline_tiled(problem, options, tiled);
    if (command == "grad") return pipeline_grad(problem, options, grad);
    throw InputError(fmt::format("{}: the {} pipeline is not part of this build yet", problem.file, command));
}

}  // namespace attn_trace
