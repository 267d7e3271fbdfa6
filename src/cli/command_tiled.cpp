// `tiled`: the tiled pass with online softmax (docs/COMMANDS.md#tiled).
#include <fmt/format.h>

#include "commands.hpp"
#include "trace_options.hpp"

namespace attn_trace::cli {

namespace {

void add_tiled_command(CLI::App& app, int& exit_code) {
    static TraceOptions options;
    static long long block_q = TiledOptions{}.block_q, block_k = TiledOptions{}.block_k;
    auto* tiled = app.add_subcommand("tiled", "tiled pass with online softmax (FlashAttention): never the whole n×m matrix");
    tiled->footer(R"(Queries in blocks of Br = --block-q rows, keys in tiles of Bc = --block-k (both 2 by default,
so that a hand-sized example shows several tiles). Per query row the running max m, running sum
ℓ and running weighted sum u; a tile that raises the max from m to m' first multiplies ℓ and u by
e^(m − m') (the rescale step). A tile in which every score is masked (e.g. above the causal
diagonal) is skipped and counted. The output u/ℓ must equal the full computation:
max_abs_diff_vs_full. JSON steps carry "tile": [query block, key tile], both 0-based.
Every tile is five steps: at n = 600 with 2 × 2 tiles, 450 000 of them. The trace's memory
is estimated before computing, the output's size before printing; past --max-memory or
--max-output the command stops with exit 2 and the figures (--steps out prints the result).

Examples:
  attn-trace tiled examples/damaged_on_arrival.json
  attn-trace tiled examples/damaged_on_arrival.json --mask causal --block-q 1 --block-k 2 --steps m,l,rescale
  attn-trace tiled examples/gqa_8q_2kv.json --block-k 3 --head 0 --format json
  attn-trace tiled examples/damaged_on_arrival.json --format html > tiled.html   (a slider through the tiles)
  attn-trace tiled examples/damaged_on_arrival.json --svg tiled.svg   (the final weights, exp(S − m) / ℓ)
  attn-trace random --n 10 --dk 4 --mask causal --seed 1 | attn-trace tiled - --block-q 4 --block-k 4 --steps out)");
    add_trace_options(*tiled, options);
    tiled->add_option("--block-q", block_q, "Br: query rows per block")->capture_default_str();
    tiled->add_option("--block-k", block_k, "Bc: keys per tile")->capture_default_str();
    tiled->callback([&exit_code] {
        const TiledOptions tiled_options{whole_number_option("--block-q", block_q, 1), whole_number_option("--block-k", block_k, 1)};
        auto request = trace_request<TiledRequest>(options);
        request.tiled = tiled_options;
        print_result(tiled_command(load_with_overrides(options), request), options);
        exit_code = 0;
    });
}

const CommandRegistration registration{30, add_tiled_command};

}  // namespace

}  // namespace attn_trace::cli
