// `grad`: the backward pass, step by step (docs/COMMANDS.md#grad).
#include <fmt/format.h>

#include "commands.hpp"
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
        GradOptions grad_options;
        grad_options.d_out = d_out;
        if (row) grad_options.row = whole_number_option("--row", *row, 0);
        if (tiled) grad_options.tiled = TiledOptions{whole_number_option("--block-q", block_q, 1), whole_number_option("--block-k", block_k, 1)};
        if (fast) {
            grad_options.fast = FastPathOptions{};
            if (block_q_option->count()) grad_options.fast->block_q = whole_number_option("--block-q", block_q, 1);
            if (block_k_option->count()) grad_options.fast->block_k = whole_number_option("--block-k", block_k, 1);
        }
        auto request = trace_request<GradRequest>(options);
        request.grad = grad_options;
        request.pictures = options.output.heatmap ? "⟦heatmap⟧" : options.svg.empty() ? "" : "⟦svg⟧";
        request.page = options.output.format == Format::html;
        // The SVG's panels are the weights of each (sequence, head) drawn: refused before the forward and backward run.
        const Problem problem = load_with_overrides(options);
        if (!options.svg.empty())
            check_svg_cells((options.output.head ? 1 : static_cast<std::size_t>(problem.heads)) * (options.output.batch ? 1 : problem.batch) * problem.n *
                            problem.m);
        print_result(grad_command(problem, request), options);
        exit_code = 0;
    });
}

const CommandRegistration registration{37, add_grad_command};

}  // namespace

}  // namespace attn_trace::cli
