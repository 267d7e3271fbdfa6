// `view`: every layer and head of a model on one sequence (docs/COMMANDS.md#view).
#include <iostream>

#include "attn_trace/view_command.hpp"
#include "budget_options.hpp"
#include "commands.hpp"
#include "trace_options.hpp"

namespace attn_trace::cli {

namespace {

// How the page's explanation of a dot product (scores, out) names its whole arithmetic.
constexpr const char* view_explain_command = "attn-trace explain {file} --cell {cell} --head {head}";

struct ViewCommandOptions {
    std::vector<std::string> files;
    TraceOptions trace;  // the overrides, backend, dtype, precision and budget every layer shares
};

void add_view_command(CLI::App& app, int& exit_code) {
    static ViewCommandOptions o;
    auto* view = app.add_subcommand("view", "a whole model at a glance: every layer and head of one sequence, the key each query weighs most");
    view->footer(R"(One problem file per layer, in layer order (tools/export_layer.py --layers all writes them), all of
one sequence: the same queries, keys and tokens (files that differ are refused, both named). Each
layer is traced as run traces it; a model directory's problem keeps its model's layer index. The
text lists, per layer, for each query and head the key it weighs most and that weight; the JSON
adds every head's weights. The HTML page is the grid of layers × heads: each cell a head's weights,
its tokens on hover, a click opens that head's trace (every cell explained on a click), and a
"lines" control draws bertviz's lines between tokens.

Examples:
  attn-trace view tests/models/gpt2_directory/problem_layer0.json tests/models/gpt2_directory/problem.json
  attn-trace view tests/models/gpt2_directory/problem_layer0.json tests/models/gpt2_directory/problem.json --format json
  attn-trace view examples/model_view/layer*/problem.json --format html > model.html)");
    view->add_option("PROBLEM", o.files, "one problem file per layer, in layer order")->required();
    view->add_option("--mask", o.trace.overrides.mask, "a mask over every layer's own (as run's --mask)");
    view->add_option("--scale", o.trace.overrides.scale, "auto (1/sqrt(d_k)), none (1) or a number, overriding the files");
    view->add_option("--dtype", o.trace.overrides.dtype, "f64, f32, f16 or bf16 (default: each file's \"dtype\", else f64)")
        ->check(CLI::IsMember({"f64", "f32", "f16", "bf16"}));
    view->add_option("--backend", o.trace.backend, "cpu or cuda")->capture_default_str();
    view->add_option("--precision", o.trace.output.precision, "decimals of the weights in the text")->check(CLI::Range(0, 17))->capture_default_str();
    view->add_flag("--allow-nonfinite", o.trace.allow_nonfinite, "trace how a NaN or infinity in an input spreads, instead of refusing it");
    add_empty_rows_and_dropout_options(*view, o.trace);
    add_format_option(*view, o.trace.output.format, formats_of(for_view), "text, json or html");
    add_memory_option(*view, o.trace.budget, "a layer whose trace");
    view->callback([&exit_code] {
        auto request = trace_request<ViewRequest>(o.trace);
        request.files = o.files;
        request.overrides = o.trace.overrides;
        if (o.trace.train || o.trace.eval) request.overrides.train = o.trace.train;
        request.allow_nonfinite = o.trace.allow_nonfinite;
        const ModelView view = view_command(request);
        const Format format = o.trace.output.format;
        std::cout << (format == Format::json   ? model_view_json(view)
                      : format == Format::html ? model_view_html(view, o.trace.output.precision, view_explain_command)
                                               : model_view_text(view, o.trace.output.precision));
        exit_code = 0;
    });
}

const CommandRegistration registration{38, add_view_command};

}  // namespace

}  // namespace attn_trace::cli
