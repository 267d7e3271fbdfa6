// The version-2 topics: members of the attention family (sparse, mla, dropout,
// permutation; docs/FAMILY.md) and the backward pass (grad); and version 3's half
// precision (precision).
#include <cmath>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attn_trace/attention_parts.hpp"
#include "attn_trace/half_float.hpp"
#include "attn_trace/permutation.hpp"
#include "attn_trace/precision.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/render_table.hpp"
#include "exercise_topics_parts.hpp"

namespace attn_trace::topic_plans {

namespace {

// "(0, 1, 1), (1.2119, 0.6584)": a small matrix's rows written inline, to 4 decimals like the answer's tables.
std::string inline_rows(const Matrix& m) {
    std::vector<std::string> rows;
    for (std::size_t i = 0; i < m.rows(); ++i) {
        std::vector<std::string> cells;
        for (std::size_t j = 0; j < m.cols(); ++j) cells.push_back(format_rounded(m(i, j), 4));  // as the worked arithmetic writes them
        rows.push_back(fmt::format("({})", fmt::join(cells, ", ")));
    }
    return fmt::format("{}", fmt::join(rows, ", "));
}

// A Longformer-style pattern on six tokens
// (docs/FAMILY.md#longformer-a-window-and-one-global-token).
ExercisePlan sparse_topic(HandNumbers& numbers) {
    ExercisePlan plan = qkv_plan("A sparse pattern: which pairs are scored, and what two layers reach", numbers, 6, 6);
    const auto global = numbers.integer(0, 1) == 0 ? 0 : 5;
    plan.problem["sparse"] = {{"window", {{"left", 1}, {"right", 1}}}, {"global", {global}}};
    plan.question = fmt::format("Six tokens attend through a Longformer-style pattern: each token reads its neighbours (a window of one token on each "
                                "side) and token {} is global (it reads every token and every token reads it). No other pair is scored.",
                                global);
    plan.expect_steps = {StepName::mask, StepName::reach, StepName::weights, StepName::out};
    plan.task("the mask M: 0 for each scored pair, −∞ elsewhere; how many pairs are scored, out of 36?", {StepName::mask}).computed_notes =
        [](const Problem&, const Trace& trace) {
            return std::vector<std::string>{fmt::format("The pattern scores {} of the 36 pairs (density {:.3g}).", trace_number(trace, "scored_pairs"),
                                                        trace_number(trace, "density"))};
        };
    plan.task("reach: through how many stacked layers does each key reach each query? Which pairs need two layers?", {StepName::reach})
        .computed_notes = [](const Problem&, const Trace& trace) {
        const Step* reach = trace.find(StepName::reach, std::nullopt, std::nullopt, std::nullopt, std::nullopt);
        std::size_t two = 0;
        for (double layers : reach->values.data()) two += layers == 2 ? 1 : 0;
        return std::vector<std::string>{fmt::format("{} pairs (the cells of reach that hold 2) need two layers: query i does not read key j, but it reads "
                                                    "a token (the global one, or a neighbour) that read j in the layer before. Every pair is connected "
                                                    "within {} layers.",
                                                    two, trace_number(trace, "reach_max"))};
    };
    plan.task("the weights (exactly 0 off the pattern) and the outputs O = A V", {StepName::weights, StepName::out}).worked = {{row(StepName::weights, 3)}};
    return plan;
}

// One head of MLA without RoPE, hand-sized
// (docs/FAMILY.md#mla-multi-head-latent-attention-deepseek-v2).
ExercisePlan mla_topic(HandNumbers& numbers) {
    ExercisePlan plan;
    plan.title = "Multi-head latent attention: keys and values from one cached latent";
    const std::size_t n = 3, d_model = 4, d_c = 2;
    plan.problem["tokens"] = numbers.words(n);
    plan.problem["X"] = numbers.matrix(n, d_model, {0, 1});
    plan.problem["W_Q"] = numbers.matrix(d_model, d_k, key_values);
    plan.problem["mla"] = {{"W_DKV", numbers.matrix(d_model, d_c, key_values)},
                           {"W_UK", numbers.matrix(d_c, d_k, key_values)},
                           {"W_UV", numbers.matrix(d_c, d_v, key_values)}};
    plan.problem["mask"] = "causal";
    plan.question = fmt::format("A decoder layer in the style of DeepSeek-V2 compresses each token x_i to a latent c_kv,i = x_i W_DKV of only d_c = {} "
                                "numbers. The keys and values are expanded from it (k = c_kv W_UK, v = c_kv W_UV); the query is q = x W_Q (d_k = {}).",
                                d_c, d_k);
    plan.expect_steps = {StepName::c_kv, StepName::k, StepName::v, StepName::q_latent, StepName::scores, StepName::weights, StepName::out};
    plan.task("c_kv = X W_DKV, then k = c_kv W_UK and v = c_kv W_UV", {StepName::c_kv, StepName::k, StepName::v}).worked = {{"k[1,0]"}};
    plan.task("q = X W_Q, the scores q kᵀ, the causal weights and the outputs", {StepName::q, StepName::scores, StepName::weights, StepName::out}).worked = {
        {cell(2, 1)}};
    plan.task("the absorbed form: q_latent = q W_UKᵀ, and check that q_latent c_kvᵀ equals the scores", {StepName::q_latent}).computed_notes =
        [](const Problem&, const Trace& trace) {
            return std::vector<std::string>{fmt::format("The absorbed scores differ from the explicit ones by {:.2g}: W_UK can be folded into the query, "
                                                        "so the keys never need to be expanded.",
                                                        trace_number(trace, "max_abs_diff_absorbed"))};
        };
    plan.task("what the cache holds per token, against multi-head attention's k and v").computed_notes = [](const Problem& problem, const Trace&) {
        // The cache sizes as decode counts them.
        const Trace decode = pipeline_decode(problem, RunOptions{}, DecodeOptions{});
        const double bytes = trace_number(decode, "kv_cache_bytes_per_number");
        return std::vector<std::string>{fmt::format("Per token and layer the cache holds c_kv: {:g} numbers, where the same head caching its "
                                                    "decompressed k and v would hold {:g} (as attn-trace decode counts them).",
                                                    trace_number(decode, "kv_cache_elements_per_token"),
                                                    trace_number(decode, "kv_cache_bytes_per_token_without_mla") / bytes)};
    };
    return plan;
}

// Dropout on the weights, with the keep matrix given
// (docs/FAMILY.md#dropout-on-the-weights-and-the-traineval-trap).
ExercisePlan dropout_topic(HandNumbers& numbers) {
    ExercisePlan plan = qkv_plan("Dropout on the attention weights, and the train/eval trap", numbers, 3, 3);
    const auto seed = numbers.integer(0, 1000);
    plan.problem["dropout"] = {{"p", 0.5}, {"seed", seed}, {"mode", "train"}};
    // The keep matrix is given in the question: the draws are the generator's, not the student's.
    const Problem problem = parse_problem(plan.problem.dump(), "exercise");
    plan.question = fmt::format("In training, dropout with p = 0.5 zeroes each attention weight with probability p and divides the kept ones by 1 − p. "
                                "This step's draws kept the weights where keep is 1; keep has the rows {}.",
                                inline_rows(DropoutDraws(problem).keep(0, 0, {0, problem.n})));
    plan.expect_steps = {StepName::weights, StepName::keep, StepName::dropped, StepName::out};
    plan.task("the weights A (no mask)", {StepName::weights});
    ExerciseTask& dropped = plan.task("dropped = A ⊙ keep / (1 − p); do its rows still add up to 1?", {StepName::keep, StepName::dropped});
    dropped.worked = {{"dropped[0,1]"}};
    dropped.computed_notes = [](const Problem& problem, const Trace& trace) {
        // Whether they do is read from the rows themselves: a draw that keeps a whole row, or
        // drops weights that add up to half of it, leaves the sum at 1.
        const Step* step = trace.find(StepName::dropped, 0, std::nullopt, std::nullopt, std::nullopt);
        bool all_one = true;
        for (std::size_t i = 0; i < step->values.rows(); ++i) {
            double sum = 0;
            for (std::size_t j = 0; j < step->values.cols(); ++j) sum += step->values(i, j);
            all_one = all_one && std::abs(sum - 1) < 1e-12;
        }
        std::vector<std::string> notes{std::string(all_one ? "Here they do, by this draw; in general no" : "No") +
                                       ": dropout keeps each weight's expected value (a kept weight is doubled, a dropped one is 0), not each "
                                       "row's sum, so a row adds up to 1 only on average."};
        for (std::string& sums : row_sums(StepName::dropped)(problem, trace)) notes.push_back(std::move(sums));
        return notes;
    };
    plan.task("the outputs O = dropped V", {StepName::out}).worked = {{row(StepName::out, 0)}};
    plan.task("what the same layer computes in eval mode").notes = {
        "In eval mode nothing is dropped and out = A V. F.scaled_dot_product_attention applies its dropout_p whatever the module's mode, "
        "so a module passes dropout_p = p if self.training else 0.0: forgetting it drops weights at inference."};
    return plan;
}

// Shuffle the tokens of an unmasked, position-free layer
// (docs/FAMILY.md#the-permutation-experiment).
ExercisePlan permutation_topic(HandNumbers& numbers) {
    ExercisePlan plan = qkv_plan("The permutation experiment: attention treats its tokens as a set", numbers, 3, 3);
    plan.question = "Three tokens, no mask and no positions. Compute the outputs; then reorder the tokens as P = (2, 0, 1) (the new row i is the old "
                    "row P[i]) and compute them again.";
    plan.expect_steps = {StepName::weights, StepName::out};
    plan.task("the weights and the outputs O = A V", {StepName::scaled, StepName::weights, StepName::out}).worked = {{row(StepName::out, 0)}};
    plan.task("the outputs for the reordered tokens: are they new numbers, or the old rows reordered?").computed_notes = [](const Problem& problem,
                                                                                                                         const Trace&) {
        const Trace permuted = permutation_trace(problem, RunOptions{}, {{2, 0, 1}, false});
        const Step* moved = permuted.find(StepName::out_of_permuted, 0, std::nullopt, std::nullopt, std::nullopt);
        return std::vector<std::string>{
            fmt::format("With the tokens reordered the outputs are {}: the rows of O in the order 2, 0, 1, unchanged in value (largest difference {:.2g}, "
                        "as attn-trace permute reports).",
                        inline_rows(moved->values), trace_number(permuted, "max_abs_diff_equivariance"))};
    };
    plan.task("which of a causal mask, RoPE or ALiBi would change the answer, and why").notes = {
        "All three: a causal mask, a window, RoPE at fixed positions or ALiBi ties scores to positions, which stay put while the tokens move: then "
        "the outputs change value, and attn-trace permute names the cause."};
    return plan;
}

// One head backward, with a hand-sized d_out (docs/COMMANDS.md#grad).
ExercisePlan grad_topic(HandNumbers& numbers) {
    ExercisePlan plan = qkv_plan("The backward pass: from dL/dO to dL/dQ, dL/dK, dL/dV", numbers, 2, 2);
    plan.problem["mask"] = "causal";
    plan.problem["d_out"] = numbers.matrix(2, d_v, {-1, 0, 1});
    plan.pipeline = "grad";
    plan.question = fmt::format("Two tokens of a decoder (causal mask, d_k = {}). The loss L adds up every cell of the output O times the matching cell "
                                "of the matrix d_out given below. Compute the gradient of L with respect to Q, K and V, step by step.",
                                d_k);
    plan.expect_steps = {StepName::grad_v, StepName::grad_weights, StepName::grad_masked, StepName::grad_q, StepName::grad_k};
    plan.task("the forward weights A and the outputs O = A V", {StepName::weights, StepName::out}).worked = {{row(StepName::weights, 1)}};
    plan.task("grad_v = Aᵀ d_out and grad_weights = d_out Vᵀ", {StepName::grad_out, StepName::grad_v, StepName::grad_weights});
    ExerciseTask& softmax = plan.task("the softmax backward grad_masked: in each row, subtract from grad_weights the row's sum of grad_weights times A, "
                                      "then multiply by A, cell by cell; why is the first row 0?",
                                      {StepName::grad_masked});
    softmax.worked = {{"grad_masked[1,0]"}};
    softmax.notes = {"Row 0 reads only key 0, so its weight is 1 whatever its score: a softmax of one visible key passes no gradient to the scores, "
                     "and the blocked cell passes exactly 0.",
                     "Each row of grad_masked sums to 0: the softmax only redistributes weight among the keys a row reads."};
    plan.task("grad_scores = s · grad_masked, then grad_q = grad_scores K and grad_k = grad_scoresᵀ Q", {StepName::grad_scores, StepName::grad_q, StepName::grad_k})
        .worked = {{"grad_q[1,0]"}, {"grad_k[0,0]"}};
    return plan;
}

// The largest error of one step of one dtype's run, as `precision` reports it.
double step_error(const PrecisionReport& report, Dtype dtype, const std::string& name) {
    for (const auto& run : report.runs)
        if (run.dtype == dtype)
            for (const auto& step : run.steps)
                if (step.name == name) return step.max_abs_error;
    throw std::logic_error("precision exercise: no " + name + " step in " + dtype_name(dtype));
}

// The scores whose exp f16 stores as inf when it is taken without the max shift, and where
// each dtype's run without the shift first meets an inf.
std::vector<std::string> overflow_notes(const Problem& problem, const Trace&) {
    Problem overflowing = problem;
    overflowing.allow_nonfinite = true;  // the overflow is what the task asks about
    const Trace unshifted_f16 = pipeline_full(overflowing, RunOptions{Dtype::f16, "cpu", false});
    std::vector<std::string> over;
    std::size_t scores = 0;
    for (const Step& exp : unshifted_f16.steps) {
        if (exp.name != StepName::exp) continue;
        const Step* z = unshifted_f16.find(StepName::masked, exp.head, exp.batch, std::nullopt, std::nullopt);
        for (std::size_t i = 0; i < exp.values.rows(); ++i)
            for (std::size_t j = 0; j < exp.values.cols(); ++j, ++scores)
                if (std::isinf(exp.values(i, j)) && std::isfinite(z->values(i, j)))
                    over.push_back(fmt::format("{} ({} reading {})", format_rounded(z->values(i, j), 4), row_label(*z, i), column_label(*z, j)));
    }
    const double largest = f16_bits_to_f32(0x7BFF);  // f16's largest finite value
    std::vector<std::string> survived;
    std::string first_inf;
    for (const auto& run : measure_precision(problem, PrecisionOptions{false}).runs) {
        if (run.dtype == Dtype::f64) continue;
        if (run.first_nonfinite) first_inf += fmt::format("{}{}'s first inf is at {}", first_inf.empty() ? "" : "; ", dtype_name(run.dtype), *run.first_nonfinite);
        else survived.push_back(dtype_name(run.dtype));
    }
    return {over.empty() ? fmt::format("None would: without the max shift every exp(z) stays below {:g}, f16's largest value.", largest)
                         : fmt::format("Without the max shift, e^z passes {:g} and f16 stores inf for {} of the {} scores: z = {}.", largest, over.size(),
                                       scores, fmt::join(over, ", ")),
            first_inf.empty() ? fmt::format("Without the max shift no score here is large enough to overflow: every exp(z) stays below {:g}.", largest)
                              : fmt::format("Without the max shift, {}; {} keep{} every value finite (their range reaches about 3.4·10³⁸). With the shift "
                                            "every exp is at most 1, and nothing overflows.",
                                            first_inf, fmt::join(survived, " and "), survived.size() == 1 ? "s" : "")};
}

// One head in f16 (docs/PROBLEM.md#dtype-half-precision), with scaled scores large enough
// (4 to 24) that exp without the max shift overflows f16, and small weights that fall to 0.
ExercisePlan precision_topic(HandNumbers& numbers) {
    ExercisePlan plan = qkv_plan("Half precision: softmax in f16, and why it subtracts the row max", numbers, 2, 3, 1, 1, {2, 3, 4}, {1, 2, 3});
    plan.problem["dtype"] = "f16";
    plan.question = fmt::format("Two tokens read three keys (d_k = {}, no mask) in f16: 11 significant bits, largest finite value 65504. Each "
                                "step is computed in f32 from the stored f16 values of the steps before it and rounded to f16 once; "
                                "the row sums stay f32.",
                                d_k);
    plan.expect_steps = {StepName::scaled, StepName::weights, StepName::out};
    plan.task("the scaled scores Q Kᵀ / 2, stored in f16: are they exact?", {StepName::scaled}).computed_notes = [](const Problem& problem, const Trace&) {
        // The f16 run's scaled scores against f64's, as `precision` measures them.
        const double error = step_error(measure_precision(problem, PrecisionOptions{}), Dtype::f16, "scaled");
        return std::vector<std::string>{
            error == 0 ? "Yes, every scaled score is exact in f16: each equals its f64 value (the largest difference is 0)."
                       : fmt::format("No, the scaled scores are not all exact in f16: they differ from their f64 values by up to {:.2g}.", error)};
    };
    plan.task("for each row: its max, exp(z − max) rounded to f16, their f32 sum, and the weights rounded to f16",
              {StepName::row_max, StepName::exp, StepName::row_sum, StepName::weights})
        .worked = {{row(StepName::weights, static_cast<std::size_t>(numbers.integer(0, 1)))}};
    plan.task("which scores would overflow f16 if exp were taken of z itself, without subtracting the max (e^z > 65504 when z > ln 65504 ≈ 11.09)?")
        .computed_notes = overflow_notes;
    ExerciseTask& out = plan.task("the outputs O = A V, rounded to f16", {StepName::out});
    out.computed_notes = [](const Problem& problem, const Trace&) {
        const PrecisionReport shifted = measure_precision(problem, PrecisionOptions{});
        return std::vector<std::string>{fmt::format("Against the same problem in f64, the f16 weights are off by at most {:.2e}, the bf16 ones (8 "
                                                    "significant bits) by {:.2e}, the f32 ones by {:.2e}.",
                                                    step_error(shifted, Dtype::f16, "weights"), step_error(shifted, Dtype::bf16, "weights"),
                                                    step_error(shifted, Dtype::f32, "weights"))};
    };
    out.notes = {"The precision command runs this comparison on any problem file, with the max shift and without it."};
    return plan;
}

}  // namespace

std::map<std::string, TopicPlanner> family_topics() {
    return {{"sparse", sparse_topic}, {"mla", mla_topic}, {"dropout", dropout_topic}, {"permutation", permutation_topic}, {"grad", grad_topic},
            {"precision", precision_topic}};
}

}  // namespace attn_trace::topic_plans
