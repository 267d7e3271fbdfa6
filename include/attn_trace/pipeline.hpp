#pragma once
// The pipelines: a validated problem in, a trace out.
#include <string>

#include "attn_trace/problem.hpp"
#include "attn_trace/trace.hpp"

namespace attn_trace {

struct RunOptions {
    Dtype dtype = Dtype::f64;
    std::string backend = "cpu";
};

// Every step of SPEC §4, for every batch element and head.
Trace pipeline_full(const Problem& problem, const RunOptions& options);

}  // namespace attn_trace
