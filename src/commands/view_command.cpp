#include "attn_trace/view_command.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn_trace/attention_parts.hpp"
#include "attn_trace/errors.hpp"

namespace attn_trace {

namespace {

// The layer a model directory's problem reads, else the file's position.
long layer_of(const Problem& problem, std::size_t position) {
    if (problem.model.empty()) return static_cast<long>(position);
    return nlohmann::json::parse(problem.model)["layer"].get<long>();
}

// The page's title: the files' own where they share one; else what their titles share
// up to ", layer" (tools/export_layer.py writes "MODEL, layer L (…)"), else up to their
// last shared ", ", else to a word's end.
std::string shared_title(const std::vector<std::string>& titles) {
    std::string prefix = titles.front();
    for (const std::string& title : titles) prefix.resize(std::mismatch(prefix.begin(), prefix.end(), title.begin(), title.end()).first - prefix.begin());
    if (prefix == titles.front() && std::all_of(titles.begin(), titles.end(), [&](const std::string& t) { return t == prefix; })) return prefix;
    if (const auto layer = prefix.rfind(", layer"); layer != std::string::npos) return prefix.substr(0, layer);
    if (const auto part = prefix.rfind(", "); part != std::string::npos) return prefix.substr(0, part);
    return prefix.substr(0, std::min(prefix.size(), prefix.rfind(' ') == std::string::npos ? 0 : prefix.rfind(' ')));
}

}  // namespace

ModelView view_command(const ViewRequest& request) {
    if (request.files.empty()) throw InputError("view needs one problem file per layer, e.g. layer0.json layer1.json");
    ModelView view;
    std::string first;
    std::vector<std::string> titles;
    for (std::size_t position = 0; position < request.files.size(); ++position) {
        const std::string& file = request.files[position];
        ProblemSource source;
        source.path = file;
        source.allow_nonfinite = request.allow_nonfinite;
        const Problem problem = load_with_overrides(source, request.overrides);
        if (problem.batch > 1)
            throw InputError(fmt::format("{}: holds {} sequences; view shows the layers of one sequence: give each layer's problem for one", file, problem.batch));
        if (position == 0) {
            first = file;
            view.n = problem.n;
            view.m = problem.m;
            view.queries = query_labels(problem);
            view.keys = key_labels(problem);
        } else if (problem.n != view.n || problem.m != view.m || query_labels(problem) != view.queries || key_labels(problem) != view.keys) {
            throw InputError(fmt::format("{}: its {} queries over {} keys{} differ from {}'s {} over {}: view puts the layers of one sequence side by side",
                                         file, problem.n, problem.m, problem.n == view.n && problem.m == view.m ? " (their tokens)" : "", first, view.n,
                                         view.m));
        }
        titles.push_back(problem.title);
        RunRequest run;
        run.backend = request.backend;
        run.budget = request.budget;
        view.layers.push_back(view_layer(run_command(problem, run).trace, layer_of(problem, position), file));
    }
    view.title = shared_title(titles);
    return view;
}

ModelViewLayer view_layer(const Trace& trace, long layer, const std::string& file) {
    ModelViewLayer out{file, layer, {}};
    const std::string name = file.empty() ? fmt::format("layer {}", layer) : file;
    for (int h = 0; h < trace.problem.heads; ++h) {
        const Step* weights = trace.find(StepName::weights, h, std::nullopt, std::nullopt, std::nullopt);
        if (!weights) throw InputError(fmt::format("{}: its trace holds no weights (the fast path, past ⟦max_memory⟧): view needs every head's weights", name));
        out.heads.push_back(view_head(h, weights->values));
        for (const Step& step : trace.steps)
            if (step.head == h && !step.t && !step.tile) out.heads.back().steps.push_back(step);
    }
    return out;
}

}  // namespace attn_trace
