#pragma once
// `view` as a function (docs/COMMANDS.md#view): one problem file per layer of a model, each
// traced, put side by side as a ModelView.
#include <string>
#include <vector>

#include "attn_trace/model_view.hpp"
#include "attn_trace/problem_overrides.hpp"
#include "attn_trace/trace_commands.hpp"

namespace attn_trace {

struct ViewRequest : TraceRequest {
    std::vector<std::string> files;  // one per layer, in layer order
    ProblemOverrides overrides;      // over every file, as run's options
    bool allow_nonfinite = false;
};

// Refuses (InputError) files of more than one sequence, and files whose queries, keys or
// tokens differ from the first file's, naming both.
ModelView view_command(const ViewRequest& request);

// One layer of the view from its trace (of one sequence): every head's weights and steps.
// `file` is the problem file it was traced from, "" for a model traced in memory.
ModelViewLayer view_layer(const Trace& trace, long layer, const std::string& file);

}  // namespace attn_trace
