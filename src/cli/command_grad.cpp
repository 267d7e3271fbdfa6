// `grad`: the backward pass, step by step (SPEC §18).
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
    auto* grad = app.add_subcommand("grad", "the backward pass: every gradient of L = Σ d_out ⊙ output, step by step");
    grad->footer(R"(The gradient of L = Σ d_out ⊙ output, where output is final (with W_O) or the heads'
concatenated out, back through every step of the forward trace: grad_concat, grad_out, grad_v,
grad_weights, the softmax backward grad_masked = A ⊙ (grad_weights − rowsum(grad_weights ⊙ A))
(exactly 0 on blocked cells), softcap, the scale, RoPE turned back, grad_q per query head,
grad_k and grad_v per KV head (summed over the query heads that read it, with GQA), and from X
the weight, bias and input gradients (weights summed over a batch). d_out comes from --d-out,
else the problem's "d_out", else ones. A row that reads no key passes no gradient (zero policy:
its weights are 0) or NaN (nan policy). Weight gradients are in math orientation (d_in, d_out).

Examples:
  attn-trace grad examples/damaged_on_arrival.json
  attn-trace grad examples/damaged_on_arrival.json --mask causal --steps grad_weights,grad_masked,grad_q
  attn-trace grad examples/gqa_8q_2kv.json --d-out random:1 --steps grad_k --format json
  attn-trace grad examples/damaged_on_arrival.json --row 1 --steps jacobian)");
    add_trace_options(*grad, options);
    grad->add_option("--d-out", d_out, "the upstream gradient dL/d output: ones or random:SEED (default: the problem's d_out, else ones)");
    grad->add_option("--row", row, "also the softmax Jacobian diag(a_i) − a_i a_iᵀ of query row i, per head, and its Frobenius norm");
    grad->callback([&exit_code] {
        const Problem problem = load_with_overrides(options);
        GradOptions grad_options;
        grad_options.d_out = d_out;
        if (row) grad_options.row = whole_number_option("--row", *row, 0);
        // The forward trace and about as many (n, m) steps again.
        refuse_over_budget(problem, "grad", 2 * full_trace_bytes(problem), options.budget);
        print_trace(pipeline_grad(problem, run_options(options), grad_options), options, problem);
        exit_code = 0;
    });
}

const CommandRegistration registration{37, add_grad_command};

}  // namespace

}  // namespace attn_trace::cli
