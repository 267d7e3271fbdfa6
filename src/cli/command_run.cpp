#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/pitfalls.hpp"
#include "commands.hpp"
#include "trace_options.hpp"

namespace attn_trace::cli {

namespace {

void add_run_command(CLI::App& app, int& exit_code) {
    static TraceOptions options;
    static bool fast = false;
    auto* run = app.add_subcommand("run", "the full step trace: scores, scale, mask, softmax, A·V, heads, W_O");
    run->footer(R"(Examples:
  attn-trace run examples/damaged_on_arrival.json
  attn-trace run examples/damaged_on_arrival.json --mask causal --steps scores,weights,out
  attn-trace run examples/damaged_on_arrival.json --format json --dtype f32
  echo '{"Q": [[1, 0]], "K": [[1, 0], [0, 1]], "V": [[1, 2], [3, 4]]}' | attn-trace run -
  attn-trace random --n 65536 --dk 64 -o big.json && attn-trace run big.json --dtype f32
  attn-trace run examples/sparse_bigbird.json --steps mask,reach
  attn-trace run examples/chunked_local_attention.json --steps masked,weights
  attn-trace run examples/damaged_on_arrival.json --mask '{"sparse": {"window": {"left": 1, "right": 1}, "global": [0]}}'
  attn-trace run examples/mla_small.json --steps c_kv,q_latent,scores
  attn-trace run examples/dropout_train.json --steps keep,dropped
  attn-trace run examples/damaged_on_arrival.json --mask causal --format html > damaged.html
  attn-trace run examples/damaged_on_arrival.json --format latex --standalone > damaged.tex && pdflatex damaged.tex

When the full trace would pass --max-memory (4G by default; eight n×m matrices per head, twice
that in f32, f16 or bf16, whose run is measured against the same run in f64),
run takes the fast path by itself: the fused tiled kernel of `attn-trace bench`, which keeps only row_max,
row_sum and out per head (and concat, final) and says so in a note.)");
    add_trace_options(*run, options);
    run->add_flag("--fast", fast, "take the fast path (fused, tiled, multi-threaded; no (n, m) steps) even when the full trace fits");
    run->callback([&exit_code] {
        auto request = trace_request<RunRequest>(options);
        request.fast = fast;
        request.pitfall = options.pitfall;
        print_result(run_command(load_with_overrides(options), request), options);
        exit_code = 0;
    });
}

const CommandRegistration registration{10, add_run_command};

}  // namespace

}  // namespace attn_trace::cli
