// `decode`: KV-cache decoding, one query at a time (docs/COMMANDS.md#decode).
#include <iostream>

#include <fmt/format.h>

#include "commands.hpp"
#include "trace_budget.hpp"
#include "trace_options.hpp"

namespace attn_trace::cli {

namespace {

struct DecodeCommandOptions {
    long long prefill = 0, layers = 1, tokens = -1;
    double bytes = 0;  // 0 = from the dtype
};

// "[0.5030 0.2484 0.2484]", long rows as their first five and last three numbers.
std::string row_text(const Matrix& m, std::size_t row, const RenderOptions& r) {
    std::vector<std::string> cells;
    for (std::size_t j = 0; j < m.cols(); ++j) {
        if (!r.full && m.cols() > 12 && j == 5) {
            cells.push_back("…");
            j = m.cols() - 4;
            continue;
        }
        cells.push_back(format_number(m(row, j), r.precision));
    }
    return fmt::format("[{}]", fmt::join(cells, " "));
}

// One line per query row and head: its step, the cache length, the weight row, the output row.
std::string step_table(const Trace& trace, const RenderOptions& r) {
    std::string text = "\ndecode steps: t, cache length after appending, weights over the cache, output row\n";
    for (const Step& weights : trace.steps) {
        if (weights.name != StepName::weights || !weights.t || (r.head && weights.head != r.head)) continue;
        const Step* out = trace.find(StepName::out, weights.head, weights.batch, weights.t, std::nullopt);
        const int first = *weights.t + 1 - static_cast<int>(weights.values.rows());
        for (std::size_t i = 0; i < weights.values.rows(); ++i) {
            const std::string who = i < weights.row_labels.size() ? fmt::format(" ({})", weights.row_labels[i]) : "";
            text += fmt::format("t = {}{}{}{}{}  cache {}  weights {}  out {}\n", first + static_cast<int>(i), who,
                                weights.values.rows() > 1 ? " prefill" : "", weights.batch ? fmt::format("  batch {}", *weights.batch) : "",
                                trace.problem.heads > 1 ? fmt::format("  head {}", *weights.head) : "", weights.values.cols(),
                                row_text(weights.values, i, r), out ? row_text(out->values, i, r) : "");
        }
    }
    return text;
}

void add_decode_command(CLI::App& app, int& exit_code) {
    static TraceOptions options;
    static DecodeCommandOptions o;
    auto* decode = app.add_subcommand("decode", "KV-cache decoding: one query at a time against a growing cache");
    decode->footer(R"(Query t is scored against the cache of keys 0..t (the cache holds only the past, so decode is
causal by construction; a padding, window or matrix mask in the problem applies inside the cache).
The result must equal the full computation with a causal-bottom-right mask: max_abs_diff_vs_full.
Cache size per token: 2 · layers · H_kv · d_k · bytes (layers · H_kv · (d_k + d_v) · bytes when d_v ≠ d_k).
Text shows one line per step; --steps (k_cache, v_cache, masked, weights, out, concat, final)
or --format json gives every matrix; JSON steps carry "t".

Examples:
  attn-trace decode examples/damaged_on_arrival.json
  attn-trace decode examples/damaged_on_arrival.json --prefill 2 --steps k_cache,weights,out
  attn-trace decode examples/gqa_8q_2kv.json --format html > decode.html   (a slider through the tokens)
  attn-trace decode examples/damaged_on_arrival.json --heatmap   (each step's weights row, stacked by t)
  attn-trace decode examples/gqa_8q_2kv.json --layers 32 --bytes 2 --tokens 8192 --format json
  attn-trace random --n 6 --dk 4 --heads 4 --kv-heads 2 --seed 3 | attn-trace decode -)");
    add_trace_options(*decode, options);
    decode->add_option("--prefill", o.prefill, "the first P queries as one causal block before decoding one at a time")->capture_default_str();
    decode->add_option("--layers", o.layers, "layers, for the cache size")->capture_default_str();
    decode->add_option("--bytes", o.bytes, "bytes per cached number for the cache size (default 8 for f64, 4 for f32, 2 for f16 and bf16)");
    decode->add_option("--tokens", o.tokens, "cache length for the total cache size (default m, the problem's keys)");
    decode->callback([&exit_code] {
        DecodeOptions decode_options;
        decode_options.prefill = whole_number_option("--prefill", o.prefill, 0);
        decode_options.layers = static_cast<int>(whole_number_option("--layers", o.layers, 1));
        if (o.bytes != 0) decode_options.bytes = o.bytes;
        if (o.tokens != -1) decode_options.tokens = whole_number_option("--tokens", o.tokens, 0);
        const Problem problem = load_with_overrides(options);
        refuse_compared_over_budget(problem, "decode", decode_trace_bytes(problem), run_options(options, problem).dtype, options.budget);
        const Trace trace =
            traced_against_f64(run_options(options, problem), [&](const RunOptions& run) { return pipeline_decode(problem, run, decode_options); });
        options.page_source.decode = decode_options;
        if (options.format == Format::text && options.steps.empty() && !options.heatmap) {
            // Per step one line; the matrices without t (stacked out, concat, final) as
            // tables. --svg draws the weights of every step t.
            Trace summary = trace;
            std::erase_if(summary.steps, [](const Step& step) { return step.t.has_value(); });
            print_trace(summary, options, problem, nullptr, &trace);
            std::cout << step_table(trace, render_options(options, problem));
        } else {
            print_trace(trace, options, problem);
        }
        exit_code = 0;
    });
}

const CommandRegistration registration{20, add_decode_command};

}  // namespace

}  // namespace attn_trace::cli
