// `decode`: KV-cache decoding, one query at a time (docs/COMMANDS.md#decode).
#include <fmt/format.h>

#include "commands.hpp"
#include "trace_options.hpp"

namespace attn_trace::cli {

namespace {

struct DecodeCommandOptions {
    long long prefill = 0, layers = 1, tokens = 0;
    double bytes = 0;
};

void add_decode_command(CLI::App& app, int& exit_code) {
    static TraceOptions options;
    static DecodeCommandOptions o;
    auto* decode = app.add_subcommand("decode", "KV-cache decoding: one query at a time against a growing cache");
    decode->footer(R"(Query t is scored against the cache of keys 0..t (the cache holds only the past, so decode is
causal by construction; a padding, window or matrix mask in the problem applies inside the cache).
The result must equal the full computation with a causal-bottom-right mask: max_abs_diff_vs_full.
Cache size per token: 2 · layers · H_kv · d_k · bytes (layers · H_kv · (d_k + d_v) · bytes when d_v ≠ d_k).
A model directory's problem counts the whole model's cache as cost --model does (its layers, each
sliding layer holding at most its window, the checkpoint's bytes) unless --layers is given.
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
    auto* layers = decode->add_option("--layers", o.layers, "layers, for the cache size (default 1; a model directory's problem: the model's, each with its window)");
    auto* bytes = decode->add_option("--bytes", o.bytes, "bytes per cached number for the cache size (default the model's checkpoint dtype; else 8 for f64, 4 for f32, 2 for f16 and bf16)");
    auto* tokens = decode->add_option("--tokens", o.tokens, "cache length for the total cache size (default m, the problem's keys)");
    decode->callback([&exit_code, layers, bytes, tokens] {
        auto request = trace_request<DecodeRequest>(options);
        request.decode.prefill = whole_number_option("--prefill", o.prefill, 0);
        if (layers->count()) request.decode.layers = static_cast<int>(whole_number_option("--layers", o.layers, 1));
        if (bytes->count()) request.decode.bytes = o.bytes;
        if (tokens->count()) request.decode.tokens = whole_number_option("--tokens", o.tokens, 0);
        print_result(decode_command(load_with_overrides(options), request), options);
        exit_code = 0;
    });
}

const CommandRegistration registration{20, add_decode_command};

}  // namespace

}  // namespace attn_trace::cli
