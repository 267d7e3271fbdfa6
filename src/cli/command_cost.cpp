// `cost`: FLOPs, score memory, KV-cache bytes and parameter counts (docs/COMMANDS.md#cost).
#include <algorithm>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "attn_trace/cost_report.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/problem.hpp"
#include "commands.hpp"
#include "budget_options.hpp"

namespace attn_trace::cli {

namespace {

struct CostCommandOptions {
    std::vector<long long> n;
    std::string sparse, mla, model;
    long long d_model = 0, heads = 1, kv_heads = -1, layers = 1, tokens = -1;  // -1: not given
    double bytes = 4;
    Format format = Format::text;
};

// --sparse: the body of a "sparse" mask ({"window": ...}) or the whole spec ({"sparse": {...}}).
SparsePattern sparse_option(const std::string& text, const std::vector<std::uint64_t>& lengths) {
    const std::size_t longest = *std::max_element(lengths.begin(), lengths.end());
    const bool whole = text.find("\"sparse\"") != std::string::npos;
    const auto masks = parse_mask_option(whole ? text : "{\"sparse\": " + text + "}", longest, longest, "--sparse");
    if (masks.size() != 1 || masks[0].kind != MaskSpec::Kind::sparse)
        throw InputError("--sparse: expected one sparse pattern such as {\"window\": 3, \"global\": [0]}");
    return masks[0].sparse;
}

// --mla 512,64 -> d_c 512, d_r 64 (d_r 0 when left out).
std::pair<std::uint64_t, std::uint64_t> mla_option(const std::string& text) {
    std::uint64_t d_c = 0, d_r = 0;
    char comma = 0;
    std::istringstream in(text);
    const bool read = static_cast<bool>(in >> d_c) && (in.eof() || (in >> comma && comma == ',' && in >> d_r && in.eof()));
    if (!read || text.find('-') != std::string::npos)
        throw InputError(fmt::format("--mla {}: expected D_C or D_C,D_R (the latent width and the RoPE key width), e.g. 512,64", text));
    return {d_c, d_r};
}

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
    cost->add_option("--tokens", o.tokens, "cache length for the KV-cache total (default n)");
    cost->add_option("--sparse", o.sparse, "a sparse pattern as JSON: count the scored pairs only");
    cost->add_option("--mla", o.mla, "D_C[,D_R]: compare the KV cache per token of MHA, GQA, MQA and MLA");
    add_format_option(*cost, o.format, formats_of(for_cost), "text or json");
    cost->callback([&exit_code, bytes, d_model, layers] {
        CostQuestion q;
        std::vector<std::uint64_t> lengths;
        for (long long n : o.n) lengths.push_back(whole_number_option("--n", n, 1));
        if (!o.model.empty()) {
            if (!o.sparse.empty() || !o.mla.empty() || lengths.size() > 1)
                throw InputError("--model counts one model's KV cache at one --n: leave out --sparse, --mla and further --n values");
            ModelCacheFacts facts = read_model_cache(o.model);
            if (bytes->count()) facts.bytes_per_number = o.bytes;
            const ModelCost cost = compute_model_cost(facts, lengths.front(), o.tokens == -1 ? lengths.front() : whole_number_option("--tokens", o.tokens, 1));
            std::cout << (o.format == Format::json ? model_cost_json(cost, o.model) : model_cost_text(cost, o.model));
            exit_code = 0;
            return;
        }
        if (d_model->count() == 0) throw InputError("cost needs --d-model (or --model DIR)");
        q.n = lengths.front();
        q.d_model = whole_number_option("--d-model", o.d_model, 1);
        q.heads = whole_number_option("--heads", o.heads, 1);
        if (o.kv_heads != -1) q.kv_heads = whole_number_option("--kv-heads", o.kv_heads, 1);
        q.layers = whole_number_option("--layers", o.layers, 1);
        if (o.tokens != -1) q.tokens = whole_number_option("--tokens", o.tokens, 1);
        q.bytes = o.bytes;
        const bool json = o.format == Format::json;
        if (!o.sparse.empty() && !o.mla.empty()) throw InputError("--sparse and --mla answer different questions: give one of them");
        if (lengths.size() > 1 && o.sparse.empty()) throw InputError("several --n values go with --sparse (to show the growth); give one otherwise");
        // --sparse counts one layer's scores and --mla the cache per token: neither has a cache total to size.
        if (o.tokens != -1 && (!o.sparse.empty() || !o.mla.empty()))
            throw InputError(fmt::format("--tokens sizes the KV cache's total, which {} does not print: leave out --tokens", o.sparse.empty() ? "--mla (per token)" : "--sparse"));
        if (layers->count() && !o.sparse.empty()) throw InputError("--sparse counts the scores of one layer: leave out --layers");
        if (!o.sparse.empty()) {
            const SparseCost cost = compute_sparse_cost(q, sparse_option(o.sparse, lengths), lengths);
            std::cout << (json ? sparse_cost_json(cost) : sparse_cost_text(cost));
        } else if (!o.mla.empty()) {
            const auto [d_c, d_r] = mla_option(o.mla);
            const CacheComparison comparison = compare_kv_caches(q, d_c, d_r);
            std::cout << (json ? cache_comparison_json(comparison) : cache_comparison_text(comparison));
        } else {
            const CostAnswer answer = compute_cost(q);
            std::cout << (json ? cost_json(answer) : cost_text(answer));
        }
        exit_code = 0;
    });
}

const CommandRegistration registration{60, add_cost_command};

}  // namespace

}  // namespace attn_trace::cli
