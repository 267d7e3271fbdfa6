#pragma once
// The explanations of the backward pass's cells (docs/COMMANDS.md#grad): each grad_
// cell written term by term from the grad trace and the forward trace it came from.
#include "explain_context.hpp"

namespace attn_trace {

// `grad` holds pipeline_grad's steps, `forward` pipeline_full's (the weights, v, q, k).
ExplainDocument explain_grad_step(const Trace& grad, const Trace& forward, const Problem& problem, const ExplainTarget& target,
                                  const ExplainOptions& options);

}  // namespace attn_trace
