#pragma once
// Common mistakes, computed side by side with the right trace (`run --pitfall NAME`):
// each wrong computation starts from the right trace's own steps, so the two differ
// only by the mistake.
#include <optional>
#include <string>
#include <vector>

#include "attn_trace/pipeline.hpp"
#include "attn_trace/problem.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/trace.hpp"

namespace attn_trace {

// mask-after-softmax, zero-scores, column-softmax, no-scale, bool-polarity.
const std::vector<std::string>& pitfall_names();

struct PitfallHead {
    Step right_weights, wrong_weights, right_out, wrong_out;
};

struct Pitfall {
    std::string name;
    std::string mistake;      // what the wrong computation does
    std::string explanation;  // one line: why it is wrong
    std::vector<PitfallHead> heads;  // per batch element and head, in trace order
};

// `right` is pipeline_full's trace of `problem`. Throws InputError for an unknown
// name, or when the mistake needs a mask and nothing is masked (it would change nothing).
Pitfall compute_pitfall(const std::string& name, const Problem& problem, const Trace& right, const RunOptions& options);

// The right and the wrong weights and outputs next to each other, with row sums.
std::string render_pitfall(const Pitfall& pitfall, const RenderOptions& options);

}  // namespace attn_trace
