#pragma once
// The explanations of run's steps (docs/COMMANDS.md#explain), read from a trace that holds every
// query row (pipeline_full) or only some (pipeline_full_rows, from first_row on).
#include "explain_context.hpp"

namespace attn_trace {

// The steps whose rows are keys, not queries: their rows are always all there.
bool key_indexed_step(StepName name);

ExplainDocument explain_run_step(const Trace& trace, const Problem& problem, const ExplainTarget& target, const ExplainOptions& options,
                                 std::size_t first_row);

}  // namespace attn_trace
