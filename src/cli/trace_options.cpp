#include "trace_options.hpp"
#include "commands.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn_trace/errors.hpp"
#include "attn_trace/mask.hpp"
#include "attn_trace/pitfalls.hpp"
#include "attn_trace/render_html.hpp"
#include "attn_trace/size_text.hpp"
#include "attn_trace/split_list.hpp"
#include "attn_trace/nearest_word.hpp"

namespace attn_trace::cli {

namespace {


void write_file(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    if (!out || !(out << text)) throw InputError(fmt::format("{}: cannot write the file", path));
}

}  // namespace

bool use_color(const std::string& setting) {
    if (setting == "always") return true;
    if (setting == "never") return false;
    // auto: a terminal, and NO_COLOR (https://no-color.org) unset or empty.
    const char* no_color = std::getenv("NO_COLOR");
    return isatty(fileno(stdout)) && (no_color == nullptr || *no_color == '\0');
}

void add_problem_options(CLI::App& command, TraceOptions& o) {
    command.add_option("PROBLEM", o.problem_path, "problem file (JSON; its keys: docs/PROBLEM.md), or - for standard input")->required();
    command.add_option("--mask", o.mask, "mask, overriding the file: " + mask_string_forms() + R"(, or JSON such as '{"sparse": {"window": 1, "global": [0]}}')");
    command.add_option("--scale", o.scale, "auto (1/sqrt(d_k)), none (1) or a number, overriding the file");
    command.add_option("--dtype", o.dtype, "f64, f32, f16 or bf16 (default: the file's \"dtype\", else f64)")->check(CLI::IsMember({"f64", "f32", "f16", "bf16"}));
    command.add_option("--backend", o.backend, "cpu or cuda")->capture_default_str();
    command.add_option("--head", o.head, "only this head's per-head steps (0-based)");
    command.add_option("--batch", o.batch, "only this sequence of a batch (0-based)");
    command.add_option("--precision", o.precision, "decimals in text tables")->check(CLI::Range(0, 17))->capture_default_str();
    command.add_flag("--allow-nonfinite", o.allow_nonfinite, "trace how a NaN or infinity in an input spreads, instead of refusing it");
    add_empty_rows_and_dropout_options(command, o);
    add_memory_option(command, o.budget);
}

void add_empty_rows_and_dropout_options(CLI::App& command, TraceOptions& o) {
    command.add_option("--empty-rows", o.empty_rows, "a query row that can read no key: error, zero or nan");
    auto* train = command.add_flag("--train", o.train, "apply the problem's dropout (train mode: keep and dropped steps)");
    command.add_flag("--eval", o.eval, "do not apply the problem's dropout (eval mode, the default)")->excludes(train);
}

void add_math_option(CLI::App& command, std::optional<MathStyle>& math) {
    // The check runs before the callback, so the name is always one of the list.
    command
        .add_option_function<std::string>(
            "--math",
            [&math](const std::string& name) {
                const auto& names = math_style_names();
                math = static_cast<MathStyle>(std::find(names.begin(), names.end(), name) - names.begin());
            },
            "Markdown's maths: dollars ($…$ and $$…$$: GitHub, pandoc, Jupyter, KaTeX) or github (GitHub's $`…`$ and ```math blocks)")
        ->check(CLI::IsMember(math_style_names()))
        ->default_str(math_style_names().front());
}

MathStyle math_style(const std::optional<MathStyle>& math, Format format) {
    if (math && format != Format::markdown)
        throw InputError(fmt::format("--math {} sets how Markdown writes maths: it needs --format markdown, not {}",
                                     math_style_names()[static_cast<std::size_t>(*math)], format));
    return math.value_or(MathStyle::dollars);
}

void add_trace_options(CLI::App& command, TraceOptions& o) {
    add_problem_options(command, o);
    add_format_option(command, o.format, formats_of(for_trace),
                      fmt::format("{} (csv writes one step: choose it with --steps; html a page to explore, each cell explained on a click)",
                                  fmt::join(formats_of(for_trace), ", ")));
    add_math_option(command, o.math);
    command.add_option("--steps", o.steps, "only these steps, comma-separated (e.g. scores,weights,out)");
    command.add_flag("--full", o.full, "print every row and column of large matrices");
    command.add_option("--color", o.color, "auto (a terminal without NO_COLOR), always or never")
        ->check(CLI::IsMember({"auto", "always", "never"}))
        ->capture_default_str();
    // permute's trace holds the two outputs, never a matrix of scores or weights to draw.
    if (command.get_name() != "permute") {
        // decode and tiled hold only their weights whole, put together from pieces (docs/COMMANDS.md#run).
        const std::string& name = command.get_name();
        const std::string drawn = name == "grad"                       ? "the forward weights"
                                  : name == "decode" || name == "tiled" ? "the whole weights (put together from the " + name + " steps)"
                                                                        : "the weights (or the first of scores, scaled, capped, masked in --steps)";
        command.add_flag("--heatmap", o.heatmap, fmt::format("draw {} of each head as a coloured grid instead of the tables", drawn));
        command.add_option("--svg", o.svg, fmt::format("also write {} of each head as an SVG heatmap to this file", drawn));
    }
    add_output_option(command, o.budget);
    // A pitfall is a variation of the full computation: decode and tiled have no use for it.
    if (command.get_name() == "run")
        command.add_option("--pitfall", o.pitfall, fmt::format("show a mistake next to the right computation: {}", fmt::join(pitfall_names(), ", ")))
            ->check(CLI::IsMember(pitfall_names()));
}

Problem load_with_overrides(const TraceOptions& o) {
    Problem problem = load_problem(o.problem_path, o.allow_nonfinite);
    if (!o.mask.empty()) {
        auto given = parse_mask_option(o.mask, problem.n, problem.m, "--mask");
        if (problem.model_masks == 0) {
            problem.masks = std::move(given);
            problem.mask_spec = mask_option_json(o.mask);
        } else {
            // A model's own masks stay: --mask replaces the file's, as the mask key combines.
            problem.masks.resize(problem.model_masks);
            problem.masks.insert(problem.masks.end(), given.begin(), given.end());
            auto spec = nlohmann::json::parse(problem.mask_spec);
            if (!spec.is_array()) spec = nlohmann::json::array({spec});  // one mask is recorded alone
            spec.erase(spec.begin() + static_cast<long>(problem.model_masks), spec.end());
            const auto option = nlohmann::json::parse(mask_option_json(o.mask));
            if (option.is_array()) spec.insert(spec.end(), option.begin(), option.end());
            else spec.push_back(option);
            problem.mask_spec = spec.dump();
        }
    }
    if (!o.scale.empty() && !problem.model.empty())
        throw InputError(fmt::format("--scale {}: the scale of a model's layer is what its config.json decides ({}); leave --scale out", o.scale, o.problem_path));
    if (!o.scale.empty()) problem.scale = parse_scale(o.scale, "--scale");
    if (o.train || o.eval) {
        if (!problem.dropout)
            throw InputError(fmt::format("{} {}: the problem has no dropout to switch (add \"dropout\": {{\"p\": 0.1, \"seed\": 0}})", o.train ? "--train" : "--eval",
                                         o.problem_path));
        problem.dropout->train = o.train;
    }
    if (!o.empty_rows.empty()) problem.empty_rows = parse_empty_rows(o.empty_rows, "--empty-rows");
    if (!o.dtype.empty()) problem.dtype = parse_dtype(o.dtype, "--dtype");
    // A --mask from the command line must fit the problem like one from the file.
    try {
        validate_masks(problem);
    } catch (const InputError& error) {
        throw InputError(fmt::format("--mask {}: {}", o.mask, error.marked()));
    }
    if (o.head && (*o.head < 0 || *o.head >= problem.heads))
        throw InputError(fmt::format("--head {}: the problem has {} head{} (0 to {})", *o.head, problem.heads, problem.heads == 1 ? "" : "s", problem.heads - 1));
    if (o.batch && (*o.batch < 0 || static_cast<std::size_t>(*o.batch) >= problem.batch))
        throw InputError(fmt::format("--batch {}: the problem has {} sequence{} (0 to {})", *o.batch, problem.batch, problem.batch == 1 ? "" : "s",
                                     problem.batch - 1));
    return problem;
}

RunOptions run_options(const TraceOptions& o, const Problem& problem) { return {problem.dtype.value_or(Dtype::f64), o.backend}; }

RenderOptions render_options(const TraceOptions& o, const Problem&) {
    RenderOptions r;
    r.precision = o.precision;
    r.full = o.full;
    r.color = o.format == Format::text && use_color(o.color);
    r.head = o.head;
    r.batch = o.batch;
    r.math = math_style(o.math, o.format);
    if (!o.steps.empty())
        for (const std::string& name : split_list(o.steps, ',')) {
            const auto step = find_step(name);
            if (!step)
                throw InputError(fmt::format("--steps: unknown step '{}'{}: expected some of {}", name, did_you_mean(name, step_names()),
                                             fmt::join(step_names(), ", ")));
            r.steps.push_back(*step);
        }
    return r;
}

// --steps naming a step this trace does not produce (after --head and --batch) is an
// error listing what it does produce, never an empty output
// (docs/COMMANDS.md#options-shared-by-run-decode-and-tiled).
void check_steps_present(const Trace& trace, const RenderOptions& r, const Problem& problem) {
    for (const auto& name : r.steps) {
        RenderOptions just_this = r;
        just_this.steps = {name};
        if (!selected_steps(trace, just_this).empty()) continue;
        std::vector<StepName> produced;
        RenderOptions every = r;
        every.steps.clear();
        for (const Step* step : selected_steps(trace, every))
            if (std::find(produced.begin(), produced.end(), step->name) == produced.end()) produced.push_back(step->name);
        std::string hint;
        const bool cache = name == StepName::k_cache || name == StepName::v_cache;
        if (name == StepName::scores && (trace.command == "decode" || trace.command == "tiled"))
            hint = fmt::format(" ({} calls s · Q Kᵀ + M 'masked', as run does: use --steps masked)", trace.command);
        else if (cache && r.head && problem.kv_heads < problem.heads)
            hint = fmt::format(" ({} carries the KV head: query head {} reads KV head {}, so use --head {})", name, *r.head,
                               *r.head / (problem.heads / problem.kv_heads), *r.head / (problem.heads / problem.kv_heads));
        else if (name == StepName::concat || name == StepName::final)
            hint = " (concat needs more than one head or W_O; final needs W_O)";
        else if (!trace.notes_of(NoteKind::fast_path).empty())
            hint = " (run took the fast path, which keeps only row_max, row_sum and out: its note says why; the full trace of a smaller "
                   "problem has every step)";
        throw InputError(fmt::format("--steps {}: this {} trace{} has no '{}' step{}; it has: {}", name, trace.command,
                                     r.head ? fmt::format(" (head {})", *r.head) : "", name, hint, fmt::join(produced, ", ")));
    }
}

namespace {

// What --heatmap and --svg draw with: the printed trace's options, or for a pictured trace of
// other steps (grad's forward) --steps narrowed to the steps it has (none left: its weights).
RenderOptions picture_options(const RenderOptions& r, const Trace* pictured) {
    RenderOptions options = r;
    if (pictured)
        std::erase_if(options.steps, [&](StepName name) {
            return std::none_of(pictured->steps.begin(), pictured->steps.end(), [&](const Step& step) { return step.name == name; });
        });
    return options;
}

}  // namespace

void print_trace(const Trace& trace, const TraceOptions& o, const Problem& problem, const Pitfall* pitfall, const Trace* pictured, const Trace* forward) {
    const RenderOptions r = render_options(o, problem);
    check_steps_present(trace, r, problem);
    if (o.heatmap && o.format != Format::text) throw InputError(fmt::format("--heatmap draws in the terminal: leave out --format {}", o.format));
    const Trace& drawn = pictured ? *pictured : trace;
    const RenderOptions drawn_options = picture_options(r, pictured);
    // The SVG first: a bad --svg path fails before anything is printed.
    if (!o.svg.empty()) write_file(o.svg, render_weights_svg(drawn, drawn_options));
    if (pitfall) {
        std::cout << render_pitfall(*pitfall, r);
        return;
    }
    if (o.heatmap) refuse_large_output(problem, drawn, Format::text, drawn_options, o.budget);
    else refuse_large_output(problem, trace, o.format, r, o.budget);
    if (o.format == Format::html) {
        // The page carries every cell's explanation (while the page is small
        // enough), which the estimate above did not count: the page is measured
        // whole before it is printed. Its explanations are at most
        // page_explained_cells texts of a few kilobytes each, so holding it costs little.
        const std::string page = render_html(trace, r, explain_cells(trace, problem, run_options(o, problem), selected_steps(trace, r), o.page_source, o.precision), forward);
        if (page.size() > o.budget.output)
            throw InputError(fmt::format("{}: the {} page would be {} with its cells' explanations; the limit is {} (--max-output): choose what to "
                                         "show with --steps, --head or --batch",
                                         problem.file, trace.command, size_text(static_cast<double>(page.size())), size_text(static_cast<double>(o.budget.output))));
        std::cout << page;
        return;
    }
    std::cout << (o.heatmap ? render_heatmap(drawn, drawn_options) : render(trace, o.format, r));
}

}  // namespace attn_trace::cli
