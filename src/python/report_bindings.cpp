// The commands whose result is a report (docs/PYTHON.md#reports): each returns every
// format its command writes, rendered once, so that the package's result object shows
// any of them without computing again.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nlohmann/json.hpp>

#include "attn_trace/cost_command.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/problem_file.hpp"
#include "attn_trace/report_commands.hpp"
#include "attn_trace/variance.hpp"
#include "attn_trace/view_command.hpp"
#include "bindings.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace attn_trace {

namespace {

// The numbers of a loaded problem that its Python object shows (docs/PYTHON.md#problems).
nb::dict facts_of(const Problem& p) {
    nb::dict facts;
    facts["title"] = p.title;
    facts["batch"] = p.batch;
    facts["n"] = p.n;
    facts["m"] = p.m;
    facts["heads"] = p.heads;
    facts["kv_heads"] = p.kv_heads;
    facts["d_k"] = p.d_k;
    facts["d_v"] = p.d_v;
    facts["d_model"] = p.d_model;
    facts["tokens"] = p.tokens;
    return facts;
}

}  // namespace

void bind_reports(nb::module_& m) {
    const auto release = nb::call_guard<nb::gil_scoped_release>();
    m.def(
        "cost",
        [](const std::vector<long long>& n, std::optional<long long> d_model, std::optional<long long> heads, std::optional<long long> kv_heads,
           std::optional<long long> layers, std::optional<long long> tokens, std::optional<double> bytes, const std::string& sparse, const std::string& mla,
           const std::string& model) {
            const CostResult result = cost_command(CostRequest{n, d_model, heads, kv_heads, layers, tokens, bytes, sparse, mla, model});
            return std::vector<std::string>{render_cost(result, Format::text), render_cost(result, Format::json)};
        },
        "n"_a, "d_model"_a = nb::none(), "heads"_a = nb::none(), "kv_heads"_a = nb::none(), "layers"_a = nb::none(), "tokens"_a = nb::none(),
        "bytes"_a = nb::none(), "sparse"_a = "", "mla"_a = "", "model"_a = "", release);
    m.def(
        "variance",
        [](const std::vector<std::size_t>& dk, std::size_t samples, std::size_t keys, std::size_t queries, std::uint64_t seed) {
            const VarianceOptions options{dk, samples, queries, keys, seed};
            const auto rows = measure_variance(options);
            return std::vector<std::string>{variance_text(rows, options), variance_json(rows, options), variance_svg(rows, options)};
        },
        "dk"_a = VarianceOptions{}.d_k, "samples"_a = VarianceOptions{}.samples, "keys"_a = VarianceOptions{}.keys, "queries"_a = VarianceOptions{}.queries,
        "seed"_a = 0, release);
    m.def(
        "precision",
        [](ATTN_TRACE_PROBLEM_ARGS, bool max_shift) {
            auto request = request_of<PrecisionRequest>(backend, max_memory);
            request.max_shift = max_shift;
            const PrecisionReport report = precision_command(ATTN_TRACE_PROBLEM, request);
            std::vector<std::string> texts;
            for (Format format : {Format::text, Format::json, Format::markdown, Format::latex}) texts.push_back(render_precision(report, format));
            texts.push_back(precision_svg(report));
            return texts;
        },
        ATTN_TRACE_PROBLEM_NAMES, "max_shift"_a = true, release);
    m.def(
        "random",
        [](std::size_t n, std::size_t m, std::size_t d_model, std::size_t dk, std::size_t dv, int heads, int kv_heads, std::uint64_t seed,
           const std::string& dist, const std::string& mask, bool literal) {
            return random_problem_text(RandomRequest{n, m, d_model, dk, dv, heads, kv_heads, seed, dist, mask, literal});
        },
        "n"_a = RandomRequest{}.n, "m"_a = 0, "d_model"_a = 0, "dk"_a = RandomRequest{}.d_k, "dv"_a = 0, "heads"_a = 1, "kv_heads"_a = 0, "seed"_a = 0,
        "dist"_a = RandomRequest{}.dist, "mask"_a = "", "literal"_a = false, release);
    m.def(
        "view",
        [](const std::vector<std::string>& files, const std::optional<std::string>& mask, const std::optional<std::string>& scale,
           const std::optional<std::string>& empty_rows, const std::optional<std::string>& dtype, std::optional<bool> train, const std::string& backend,
           std::uint64_t max_memory, bool allow_nonfinite, int precision, const std::string& explain) {
            auto request = request_of<ViewRequest>(backend, max_memory);
            request.files = files;
            request.overrides = ProblemOverrides{mask, scale, empty_rows, dtype, train};
            request.allow_nonfinite = allow_nonfinite;
            const ModelView view = view_command(request);
            return std::vector<std::string>{model_view_text(view, precision), model_view_json(view), model_view_html(view, precision, explain)};
        },
        "files"_a, "mask"_a = nb::none(), "scale"_a = nb::none(), "empty_rows"_a = nb::none(), "dtype"_a = nb::none(), "train"_a = nb::none(),
        "backend"_a = "cpu", "max_memory"_a = Budget{}.memory, "allow_nonfinite"_a = false, "precision"_a = 4, "explain"_a = "", release);
    nb::class_<ModelInMemory>(m, "ModelInMemory").def_ro("name", &ModelInMemory::name);
    m.def(
        "hold_model",
        [](const std::string& name, const std::string& config, nb::bytes tensors) {
            return hold_model(name, config, std::string(tensors.c_str(), tensors.size()));
        },
        "name"_a, "config"_a, "tensors"_a);
    m.def(
        "model_page",
        [](const nb::list& traces, const std::vector<long>& layers, const std::string& title, const std::vector<bool>& special, int precision,
           const std::string& explain, bool hide_special) {
            ModelView view;
            view.title = title;
            view.special = special;
            view.hide_special = hide_special;
            for (std::size_t k = 0; k < layers.size(); ++k) {
                const Trace& trace = nb::cast<const TraceResult&>(traces[k]).trace;
                view.layers.push_back(view_layer(trace, layers[k], ""));
                if (k > 0) continue;
                const Step* weights = trace.find(StepName::weights, 0, std::nullopt, std::nullopt, std::nullopt);
                if (!weights) throw InputError("the first layer's trace holds no weights");
                view.n = weights->values.rows();
                view.m = weights->values.cols();
                view.queries = weights->row_labels;
                view.keys = weights->column_labels;
            }
            return model_view_html(view, precision, explain);
        },
        "traces"_a, "layers"_a, "title"_a, "special"_a, "precision"_a = 4, "explain"_a = "", "hide_special"_a = false);
    m.def(
        "load",
        [](const std::optional<std::string>& path, const std::optional<std::string>& text, const std::string& label, bool allow_nonfinite,
           const ModelInMemory* model) {
            // Holds the GIL: facts_of builds Python objects (loading is reading and checking, not computing).
            return facts_of(problem_of(path, text, label, allow_nonfinite, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt, model));
        },
        "path"_a = nb::none(), "text"_a = nb::none(), "label"_a = "<problem>", "allow_nonfinite"_a = false, "model"_a = nb::none());
    m.def(
        "problem_file_text", [](const std::string& json) { return problem_file_text(nlohmann::ordered_json::parse(json)); }, "json"_a);
}

}  // namespace attn_trace
