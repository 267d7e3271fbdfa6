#pragma once
// The explanations (docs/COMMANDS.md#explain) of decode's steps at one t and of the tiled
// pass's steps at one tile, each computed on its own: decode step t reads
// query t and keys 0 … t; tile [qb, kt] reads query block qb and tiles 0 … kt.
#include "explain_context.hpp"

namespace attn_trace {

ExplainDocument explain_decode_step(const Problem& problem, const RunOptions& run, const ExplainTarget& target, const ExplainOptions& options,
                                    const ExplainSource& source, std::size_t batch);
ExplainDocument explain_tiled_step(const Problem& problem, const RunOptions& run, const ExplainTarget& target, const ExplainOptions& options,
                                   const ExplainSource& source, std::size_t batch);

}  // namespace attn_trace
