#pragma once
// What every pipeline (full, decode, tiled, grad and the fast path) holds, and how
// each starts and ends its trace, written once: a pipeline's class keeps only what
// is its own (decode's cache offset, tiled's block sizes, grad's forward trace).
#include <memory>
#include <optional>
#include <string>

#include "attn_trace/attention_parts.hpp"
#include "attn_trace/backend.hpp"
#include "attn_trace/pipeline.hpp"
#include "overflow.hpp"
#include "stepwise_parts.hpp"

namespace attn_trace {

class PipelineBase {
protected:
    // The trace starts with its command and the problem's summary, the same for a
    // whole run and for explain's slices of it. Notes are left to each pipeline:
    // the whole runs start them with problem_notes, explain's slices keep none, and
    // grad takes its forward trace's.
    PipelineBase(const Problem& problem, const RunOptions& options, std::string command)
        : stored_(stored_in(problem, options.dtype)), p_(stored_ ? *stored_ : problem), options_(options), dtype_(options.dtype), backend_(make_backend(options.backend)) {
        trace_.command = std::move(command);
        trace_.problem = summarise_problem(p_, dtype_, backend_->name());
    }
    // steps_ holds a reference to this object's own trace_: a copy would record into the original's.
    PipelineBase(const PipelineBase&) = delete;
    PipelineBase& operator=(const PipelineBase&) = delete;
    ~PipelineBase() = default;

    // How a pipeline ends: the overflow check over every step (check_overflow), then the
    // trace handed over. Decode's and tiled's whole runs call check_overflow themselves,
    // before their comparison with the full trace, so that their own overflow is the one reported.
    Trace finish() {
        check_overflow(trace_, p_, dtype_);
        return std::move(trace_);
    }

    // In a half type the problem's inputs as the type stores them
    // (docs/PROBLEM.md#dtype-half-precision): every step reads those, x and the weights too.
    const std::optional<Problem> stored_;
    const Problem& p_;
    const RunOptions options_;
    const Dtype dtype_;  // options_.dtype
    const std::unique_ptr<Backend> backend_;
    Trace trace_;
    StepRecorder steps_{p_, trace_};
};

}  // namespace attn_trace
