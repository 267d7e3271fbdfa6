// `grad`: the backward pass, step by step (docs/COMMANDS.md#grad).
#include <fmt/format.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/pipeline.hpp"
#include "commands.hpp"
#include "trace_budget.hpp"
#include "trace_options.hpp"

namespace attn_trace::cli {

namespace {

void add_grad_command(CLI::App& app, int& exit_code) {
    static TraceOptions options;
    static std::string d_out;
    static std::optional<long long> row;
    static bool tiled = false, fast = false;
    static long long block_q = TiledOptions{}.block_q, block_k = TiledOptions{}.block_k;
    auto* grad = app.add_subcommand("grad", "the backward pass: every gradient of L = Σ d_out ⊙ output, step by step");
    grad->footer(R"(The gradient of L = Σ d_out ⊙ output, where output is final (with W_O) or the heads'
concatenated out, back through every step of the forward trace: grad_concat, grad_out, grad_v,
grad_weights, the softmax backward grad_masked = A ⊙ (grad_weights − rowsum(grad_weights ⊙ A))
(exactly 0 on blocked cells), softcap, the scale, RoPE turned back, grad_q per query head,
grad_k and grad_v per KV head (summed over the query heads that read it, with GQA), and from X
the weight, bias and input gradients (weights summed over a batch). d_out comes from --d-out,
else the problem's "d_out", else ones. A row that reads no key passes no gradient (zero policy:
its weights are 0) or NaN (nan policy). Weight gradients are in math orientation (d_in, d_out).
--tiled runs FlashAttention-2's backward in Br × Bc tiles (--block-q, --block-k, 2 by default): the
forward keeps only lse = m + ln ℓ per row (the fast path's), delta = rowsum(grad_out ⊙ out), and each
tile recomputes p = exp(z − lse), grad_p = grad_out V_tᵀ and grad_s = p ⊙ (grad_p − delta) (tile steps
are kept while n · m ≤ 65 536 per head); max_abs_diff_vs_full compares with the untiled gradients.
--fast runs the same backward fused on the fast path's kernels (64 × 64 tiles, vectorised, one thread
per core over key tiles): no (n, m) step, only lse, delta, grad_q, grad_k, grad_v and the input
gradients; f32 or f64, masks by key ranges (causal, window, lengths); n = 65 536, d_k = 64, one head on 2 threads took 0.6-0.7 GB.

Examples:
  attn-trace grad examples/damaged_on_arrival.json
  attn-trace grad examples/damaged_on_arrival.json --mask causal --steps grad_weights,grad_masked,grad_q
  attn-trace grad examples/gqa_8q_2kv.json --d-out random:1 --steps grad_k --format json
  attn-trace grad examples/damaged_on_arrival.json --row 1 --steps jacobian
  attn-trace grad examples/damaged_on_arrival.json --mask causal --format html > grad.html
  attn-trace grad examples/damaged_on_arrival.json --mask causal --tiled --block-q 1 --block-k 2 --steps lse,delta,grad_s,grad_q
  attn-trace random --n 4096 --dk 64 --seed 1 > big.json && attn-trace grad big.json --fast --mask causal --steps lse --format json)");
    add_trace_options(*grad, options);
    grad->add_option("--d-out", d_out, "the upstream gradient dL/d output: ones or random:SEED (default: the problem's d_out, else ones)");
    grad->add_option("--row", row, "also the softmax Jacobian diag(a_i) − a_i a_iᵀ of query row i, per head, and its Frobenius norm");
    grad->add_flag("--tiled", tiled, "FlashAttention-2's backward: recompute each tile from lse, never the (n, m) matrices");
    grad->add_flag("--fast", fast, "the fused backward (FlashAttention-2's) on the fast path's kernels: O(n) steps only");
    auto* block_q_option = grad->add_option("--block-q", block_q, "Br: query rows per block (with --tiled; with --fast default 64)")->capture_default_str();
    auto* block_k_option = grad->add_option("--block-k", block_k, "Bc: keys per tile (with --tiled; with --fast default 64)")->capture_default_str();
    grad->callback([&exit_code, block_q_option, block_k_option] {
        const Problem problem = load_with_overrides(options);
        GradOptions grad_options;
        grad_options.d_out = d_out;
        if (row) grad_options.row = whole_number_option("--row", *row, 0);
        if (tiled) grad_options.tiled = TiledOptions{whole_number_option("--block-q", block_q, 1), whole_number_option("--block-k", block_k, 1)};
        if (fast) {
            grad_options.fast = FastPathOptions{};
            if (block_q_option->count()) grad_options.fast->block_q = whole_number_option("--block-q", block_q, 1);
            if (block_k_option->count()) grad_options.fast->block_k = whole_number_option("--block-k", block_k, 1);
        }
        // Untiled: the forward trace and about as many (n, m) steps again. The fused backward holds O(n) per head.
        // --heatmap and --svg draw the forward weights A, what the backward reads: one more
        // forward trace beside the gradients (`within` counts it; past the budget they are
        // refused). The page hatches grad_masked's zeros where the forward pass's mask
        // blocked the weight, from that forward trace when there is room for it.
        const Dtype dtype = run_options(options, problem).dtype;
        const double full = full_trace_bytes(problem), grad_bytes = tiled || fast ? 0 : 2 * full;
        const bool pictures = options.heatmap || !options.svg.empty();
        if (!tiled && !fast) refuse_compared_over_budget(problem, "grad", grad_bytes, dtype, options.budget);
        const bool within = compared_trace_bytes(grad_bytes, dtype) + full <= static_cast<double>(options.budget.memory);
        const bool page = options.format == Format::html && within;
        if (pictures && !within)
            throw InputError(fmt::format("{}: {} draws the forward weights A, whose full trace of n = {} × m = {} × {} head(s) would hold about {} "
                                         "beside the gradients'; the limit is {} (--max-memory): leave it out, or raise --max-memory",
                                         problem.file, options.heatmap ? "--heatmap" : "--svg", problem.n, problem.m, problem.heads, size_text(full),
                                         size_text(static_cast<double>(options.budget.memory))));
        // The SVG's panels are the weights of each (sequence, head) drawn: refused before the forward and backward run.
        if (!options.svg.empty())
            check_svg_cells((options.head ? 1 : static_cast<std::size_t>(problem.heads)) * (options.batch ? 1 : problem.batch) * problem.n * problem.m);
        const std::optional<Trace> forward = page || pictures ? std::optional(pipeline_full(problem, run_options(options, problem))) : std::nullopt;
        const Trace trace =
            traced_against_f64(run_options(options, problem), [&](const RunOptions& run) { return pipeline_grad(problem, run, grad_options); });
        print_trace(trace, options, problem, nullptr, pictures ? &*forward : nullptr, page ? &*forward : nullptr);
        exit_code = 0;
    });
}

const CommandRegistration registration{37, add_grad_command};

}  // namespace

}  // namespace attn_trace::cli
