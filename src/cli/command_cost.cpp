// `cost`: FLOPs, score memory, KV-cache bytes and parameter counts (docs/COMMANDS.md#cost).
#include <iostream>

#include "attn_trace/cost_command.hpp"
#include "commands.hpp"

namespace attn_trace::cli {

namespace {

struct CostCommandOptions {
    std::vector<long long> n;
    std::string sparse, mla, model;
    long long d_model = 0, heads = 1, kv_heads = 0, layers = 1, tokens = 0;
    double bytes = 4;
    Format format = Format::text;
};

void add_cost_command(CLI::App& app, int& exit_code) {
    static CostCommandOptions o;
    auto* cost = app.add_subcommand("cost", "FLOPs, score memory, KV-cache bytes and parameter counts of an attention layer");
    cost->footer(R"(Counting convention: one multiply-add counts 1 (MHA: 4·N·d² for the projections + 2·N²·d
for Q Kᵀ and A V); FLOPs counting multiply and add separately are twice as many. MB = 10^6 bytes,
MiB = 2^20, GiB = 2^30. The N² term overtakes when N > 2·d (N > d + H_kv·d_k with fewer KV heads).

Examples:
  attn-trace cost --n 120 --d-model 64 --heads 4
  attn-trace cost --n 8192 --d-model 4096 --heads 32 --kv-heads 8 --layers 32 --bytes 2
  attn-trace cost --n 1024 --d-model 512 --heads 8 --format json
  attn-trace cost --n 1024,4096,16384 --d-model 768 --heads 12 --sparse '{"block": 64, "window": {"left": 1, "right": 1}, "global": [0], "random": {"per_row": 3, "seed": 0}}'
  attn-trace cost --n 4096 --d-model 16384 --heads 128 --kv-heads 8 --mla 512,64 --bytes 2
  attn-trace cost --model tests/models/gemma2 --n 4096

--sparse counts only the pairs the pattern scores (the JSON of a "sparse" mask, as in a problem file), at each
--n; --mla D_C[,D_R] sets the cache per token of MHA, GQA (--kv-heads), MQA and MLA side by side.
--model DIR reads a model directory (config.json and its safetensors) and counts its KV cache layer by layer:
a sliding layer holds min(n, W) tokens, MLA its latent and RoPE key.)");
    cost->add_option("--n", o.n, "tokens in the sequence; several (1024,4096 or --n again) with --sparse show the growth")->required()->delimiter(',');
    auto* d_model = cost->add_option("--d-model", o.d_model, "width of a token vector (d)");
    auto* heads = cost->add_option("--heads", o.heads, "query heads H (d_k = d_model / H)")->capture_default_str();
    auto* kv_heads = cost->add_option("--kv-heads", o.kv_heads, "key/value heads H_kv (default H; 1 = multi-query)");
    auto* layers = cost->add_option("--layers", o.layers, "layers, for the KV cache")->capture_default_str();
    auto* bytes = cost->add_option("--bytes", o.bytes, "bytes per number: 4 float32, 2 fp16/bf16, 8 float64 (with --model: the checkpoint's)")->capture_default_str();
    auto* model = cost->add_option("--model", o.model, "a model directory: its KV cache per token and per layer, from its config.json and safetensors");
    // The model decides what these say; --n and --bytes stay free.
    for (auto* decided : {d_model, heads, kv_heads, layers}) model->excludes(decided);
    auto* tokens = cost->add_option("--tokens", o.tokens, "cache length for the KV-cache total (default n)");
    cost->add_option("--sparse", o.sparse, "a sparse pattern as JSON: count the scored pairs only");
    cost->add_option("--mla", o.mla, "D_C[,D_R]: compare the KV cache per token of MHA, GQA, MQA and MLA");
    add_format_option(*cost, o.format, formats_of(for_cost), "text or json");
    cost->callback([&exit_code, d_model, heads, kv_heads, layers, tokens, bytes] {
        CostRequest request;
        request.n = o.n;
        request.sparse = o.sparse;
        request.mla = o.mla;
        request.model = o.model;
        if (d_model->count()) request.d_model = o.d_model;
        if (heads->count()) request.heads = o.heads;
        if (kv_heads->count()) request.kv_heads = o.kv_heads;
        if (layers->count()) request.layers = o.layers;
        if (tokens->count()) request.tokens = o.tokens;
        if (bytes->count()) request.bytes = o.bytes;
        std::cout << render_cost(cost_command(request), o.format);
        exit_code = 0;
    });
}

const CommandRegistration registration{60, add_cost_command};

}  // namespace

}  // namespace attn_trace::cli
