// explain_cells: what the HTML page shows on a click, every cell explained the
// way `explain --cell` explains one, so the page and the command cannot disagree.
#include <optional>

#include <fmt/format.h>

#include "attn_trace/attention_parts.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/explain.hpp"
#include "explain_document.hpp"
#include "explain_grad.hpp"

namespace attn_trace {

namespace {

// One trace's explanations: run's and grad's are read from the trace itself;
// decode's and tiled's steps are computed for their t or tile (what explain --t and
// --tile do); their other steps (the projections) are run's.
class CellExplainer {
public:
    CellExplainer(const Trace& trace, const Problem& problem, const RunOptions& run, const ExplainSource& source)
        : trace_(trace), stored_(stored_in(problem, run.dtype)), problem_(stored_ ? *stored_ : problem), run_(run), source_(source) {}

    std::string operator()(const Step& step, const ExplainTarget& target, const ExplainOptions& options) {
        if (trace_.command == "grad") {
            if (!forward_) forward_ = pipeline_full(problem_, run_);
            return render_explanation(explain_grad_step(trace_, *forward_, problem_, target, options), Format::text);
        }
        if (trace_.command == "run") return explain(trace_, problem_, target, options);
        ExplainSource at = source_;
        if (step.t) at.t = static_cast<std::size_t>(*step.t);
        if (step.tile) at.tile = std::array{static_cast<std::size_t>((*step.tile)[0]), static_cast<std::size_t>((*step.tile)[1])};
        if (!step.t && !step.tile) at = ExplainSource{};
        return explain_problem(problem_, run_, target, options, at);
    }

private:
    const Trace& trace_;
    // In a half type the inputs as the type stores them, which the explanations multiply.
    const std::optional<Problem> stored_;
    const Problem& problem_;
    const RunOptions& run_;
    const ExplainSource& source_;
    std::optional<Trace> forward_;  // grad's forward trace, computed once
};

}  // namespace

CellExplanations explain_cells(const Trace& trace, const Problem& problem, const RunOptions& run, const std::vector<const Step*>& steps,
                               const ExplainSource& source, int precision) {
    CellExplanations out;
    std::size_t cells = 0;
    for (const Step* step : steps) cells += step->values.rows() * step->values.cols();
    if (cells > page_explained_cells) {
        out.note = fmt::format("This page explains its cells while its steps hold at most {} numbers; these hold {}. "
                               "attn-trace explain explains any one of them: the cell as STEP[i,j], with the head, t or tile its step's heading names.",
                               page_explained_cells, cells);
        return out;
    }
    if (!trace.notes_of(NoteKind::fast_path).empty()) {
        out.note = "run took the fast path, which keeps only row_max, row_sum and out: attn-trace explain computes any cell of the full trace on its own.";
        return out;
    }
    if (trace.command == "permute") {
        out.note = "permute's steps come from two problems, the original and the permuted one: attn-trace explain explains the original's cells.";
        return out;
    }
    out.note = "explain does not explain this step's cells (it explains the steps of run, decode, tiled and grad).";
    out.steps.resize(trace.steps.size());
    CellExplainer explainer(trace, problem, run, source);
    for (const Step* step : steps) {
        auto& texts = out.steps[static_cast<std::size_t>(step - trace.steps.data())];
        // decode's caches carry their KV head; explain takes a query head that reads it.
        const bool cache = step->name == StepName::k_cache || step->name == StepName::v_cache;
        const int head = cache ? step->head.value_or(0) * (problem.heads / problem.kv_heads) : step->head.value_or(0);
        const ExplainOptions options{head, step->batch.value_or(0), precision, Format::text};
        try {
            for (std::size_t i = 0; i < step->values.rows(); ++i)
                for (std::size_t j = 0; j < step->values.cols(); ++j) {
                    const ExplainTarget target{step->name, i, j, fmt::format("{}[{},{}]", step->name, i, j)};
                    texts.push_back(explainer(*step, target, options));
                }
        } catch (const InputError&) {
            texts.clear();  // a step explain has no explanation for: the page shows the note
        }
    }
    return out;
}

}  // namespace attn_trace
