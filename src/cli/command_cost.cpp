// `cost`: FLOPs, score memory, KV-cache bytes and parameter counts (SPEC §11).
#include <iostream>

#include "attn_trace/cost.hpp"
#include "attn_trace/errors.hpp"
#include "commands.hpp"
#include "trace_budget.hpp"

namespace attn_trace::cli {

namespace {

struct CostCommandOptions {
    long long n = 0, d_model = 0, heads = 1, kv_heads = -1, layers = 1, tokens = -1;  // -1: not given
    double bytes = 4;
    std::string format = "text";
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
  attn-trace cost --n 1024 --d-model 512 --heads 8 --format json)");
    cost->add_option("--n", o.n, "tokens in the sequence")->required();
    cost->add_option("--d-model", o.d_model, "width of a token vector (d)")->required();
    cost->add_option("--heads", o.heads, "query heads H (d_k = d_model / H)")->capture_default_str();
    cost->add_option("--kv-heads", o.kv_heads, "key/value heads H_kv (default H; 1 = multi-query)");
    cost->add_option("--layers", o.layers, "layers, for the KV cache")->capture_default_str();
    cost->add_option("--bytes", o.bytes, "bytes per number: 4 float32, 2 fp16/bf16, 8 float64")->capture_default_str();
    cost->add_option("--tokens", o.tokens, "cache length for the KV-cache total (default n)");
    cost->add_option("--format", o.format, "text or json")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
    cost->callback([&exit_code] {
        CostQuestion q;
        q.n = whole_number_option("--n", o.n, 1);
        q.d_model = whole_number_option("--d-model", o.d_model, 1);
        q.heads = whole_number_option("--heads", o.heads, 1);
        if (o.kv_heads != -1) q.kv_heads = whole_number_option("--kv-heads", o.kv_heads, 1);
        q.layers = whole_number_option("--layers", o.layers, 1);
        if (o.tokens != -1) q.tokens = whole_number_option("--tokens", o.tokens, 1);
        q.bytes = o.bytes;
        const CostAnswer answer = compute_cost(q);
        std::cout << (o.format == "json" ? cost_json(answer) : cost_text(answer));
        exit_code = 0;
    });
}

const CommandRegistration registration{60, add_cost_command};

}  // namespace

}  // namespace attn_trace::cli
