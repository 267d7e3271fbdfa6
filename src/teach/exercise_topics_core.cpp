// The version-1 topics: one attention layer step by step (scores, softmax, causal,
// padding, multihead, gqa, kv-cache, tiled, scale) and what it costs (cost).
#include <algorithm>
#include <cstdint>
#include <optional>

#include <fmt/format.h>

#include "attn_trace/cost.hpp"
#include "attn_trace/cost_report.hpp"
#include "attn_trace/number_text.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/render_table.hpp"
#include "attn_trace/size_text.hpp"
#include "exercise_topics_parts.hpp"

namespace attn_trace::topic_plans {

namespace {

ExercisePlan scores(HandNumbers& numbers) {
    ExercisePlan plan = qkv_plan("Scores: Q Kᵀ and the scale", numbers, 3, 3);
    plan.question = fmt::format("Three tokens have the queries Q and the keys K below, one row per token (d_k = {}). Compute every score and scale it.", d_k);
    plan.expect_steps = {StepName::scores, StepName::scaled};
    plan.task(fmt::format("S = Q Kᵀ, a (3, 3) matrix: S_ij = q_i · k_j, the sum of {} products", d_k), {StepName::scores}).worked = {
        {cell(static_cast<std::size_t>(numbers.integer(0, 2)), static_cast<std::size_t>(numbers.integer(0, 2)))}};
    plan.task(fmt::format("the scale s = 1/√d_k = 1/√{}, and the scaled scores s·S", d_k), {StepName::scaled}).notes = {
        fmt::format("s = 1/√{} = 1/2 = 0.5: every scaled score is half its score.", d_k)};
    return plan;
}

ExercisePlan softmax(HandNumbers& numbers) {
    ExercisePlan plan = qkv_plan("Softmax row by row, then the weighted sum", numbers, 3, 3);
    plan.question = fmt::format("Three tokens have the queries, keys and values below (d_k = {}, no mask). Compute the attention weights and the outputs.", d_k);
    plan.expect_steps = {StepName::scaled, StepName::weights, StepName::out};
    const auto r = static_cast<std::size_t>(numbers.integer(0, 2));
    plan.task("the scaled scores Q Kᵀ / √d_k", {StepName::scaled});
    plan.task("for each row: its max, e^(z − max) for every key, their sum, and the weights",
              {StepName::row_max, StepName::exp, StepName::row_sum, StepName::weights})
        .worked = {{row(StepName::weights, r)}};
    plan.task("check that every row of weights adds up to 1").computed_notes = row_sums(StepName::weights);
    plan.task("the outputs O = A V", {StepName::out}).worked = {{row(StepName::out, r)}};
    return plan;
}

ExercisePlan causal(HandNumbers& numbers) {
    ExercisePlan plan = qkv_plan("The causal mask", numbers, 3, 3);
    plan.problem["mask"] = "causal";
    plan.question = "Three tokens of a decoder read only themselves and the tokens before them (a causal mask). Compute the weights and outputs.";
    plan.expect_steps = {StepName::mask, StepName::masked, StepName::weights, StepName::out};
    const auto r = static_cast<std::size_t>(numbers.integer(1, 2));
    plan.task("the mask M: 0 where token i may read token j (j ≤ i), −∞ above the diagonal", {StepName::mask});
    plan.task("the masked scores Q Kᵀ / √d_k + M", {StepName::scaled, StepName::masked});
    ExerciseTask& weights = plan.task("the weights, row by row (why is the first row (1, 0, 0)?)", {StepName::weights});
    weights.worked = {{row(StepName::weights, r)}};
    weights.notes = {"The first token may read only itself: its row has one visible key, whose e^(z − max) = e^0 = 1 is the whole sum, so its "
                     "weight is 1 whatever its score.",
                     "A masked key gets the score −∞ and the weight e^(−∞) = 0 exactly; the visible keys share the whole weight of 1."};
    plan.task("the outputs O = A V", {StepName::out}).worked = {{row(StepName::out, r)}};
    return plan;
}

ExercisePlan padding(HandNumbers& numbers) {
    ExercisePlan plan = qkv_plan("Padding: keys that are not there", numbers, 4, 4);
    const auto padded = numbers.integer(1, 2);
    std::vector<int> valid(4, 1);
    for (std::int64_t k = 0; k < padded; ++k) valid[3 - static_cast<std::size_t>(k)] = 0;
    for (std::int64_t k = 0; k < padded; ++k) plan.problem["tokens"][3 - static_cast<std::size_t>(k)] = "<pad>";
    plan.problem["mask"] = {{"key_valid", valid}};
    plan.question = fmt::format("A sequence of {} tokens was padded to length 4 with {} <pad> token{}. No token may read the padding.", 4 - padded,
                                padded, padded == 1 ? "" : "s");
    plan.expect_steps = {StepName::mask, StepName::weights, StepName::out};
    plan.task("the padding mask M: −∞ in the columns of the <pad> keys", {StepName::mask});
    plan.task("the weights of every row (the <pad> rows too: they read the real tokens)", {StepName::scaled, StepName::weights}).worked = {
        {row(StepName::weights, 0)}};
    ExerciseTask& out = plan.task("the outputs O = A V", {StepName::out});
    out.worked = {{row(StepName::out, 0)}};
    out.notes = {"The outputs of the <pad> rows are computed but thrown away later (the loss ignores them)."};
    return plan;
}

ExercisePlan multihead(HandNumbers& numbers) {
    ExercisePlan plan = qkv_plan("Two heads, concatenated and mixed by W_O", numbers, 3, 3, 2, 2);
    plan.problem["W_O"] = numbers.matrix(2 * d_v, 2, key_values);
    plan.question = fmt::format("Q, K and V hold two heads side by side: head 0 uses columns 0–{} of Q and K (0–{} of V), head 1 the next ones.", d_k - 1,
                                d_v - 1);
    plan.expect_steps = {StepName::weights, StepName::out, StepName::concat, StepName::final};
    const auto r = static_cast<std::size_t>(numbers.integer(0, 2));
    plan.task("split Q, K, V into the two heads").notes = {
        fmt::format("Head h reads columns {}h to {}h + {} of Q and K and columns {}h to {}h + {} of V: the blocks the givens show as head 0 and head 1.",
                    d_k, d_k, d_k - 1, d_v, d_v, d_v - 1)};
    plan.task(fmt::format("the weights of each head (d_k = {}, scale 1/√d_k)", d_k), {StepName::scaled, StepName::weights}).worked = {
        {row(StepName::weights, r), 1}};
    plan.task(fmt::format("each head's output A_h V_h, (3, {})", d_v), {StepName::out}).worked = {{row(StepName::out, r), 1}};
    plan.task(fmt::format("concat = [O_0 O_1], (3, {})", 2 * d_v), {StepName::concat});
    plan.task("final = concat W_O, (3, 2)", {StepName::final});
    return plan;
}

// The cache per token and layer as `decode` counts it: a key of d_k and a value of d_v per KV head.
std::vector<std::string> gqa_cache_notes(const Problem& problem, const Trace&) {
    std::vector<std::string> notes;
    const Trace decoded = pipeline_decode(problem, RunOptions{}, DecodeOptions{});
    const double bytes_per_number = trace_number(decoded, "kv_cache_bytes_per_number");
    const double shared = trace_number(decoded, "kv_cache_elements_per_token");
    const double unshared = trace_number(decoded, "kv_cache_bytes_per_token_without_sharing") / bytes_per_number;
    notes.push_back(fmt::format("The cache holds H_kv · (d_k + d_v) = {} · ({} + {}) = {:g} numbers per token and layer, against "
                                "H · (d_k + d_v) = {} · ({} + {}) = {:g} with one KV head per query head ({:g}× fewer).",
                                problem.kv_heads, problem.d_k, problem.d_v, shared, problem.heads, problem.d_k, problem.d_v, unshared, unshared / shared));
    return notes;
}

ExercisePlan gqa(HandNumbers& numbers) {
    ExercisePlan plan = qkv_plan("Grouped-query attention: 4 query heads, 2 KV heads", numbers, 2, 2, 4, 2);
    plan.question = fmt::format("Two tokens, 4 query heads and 2 key/value heads (d_k = {}, d_v = {}). Q holds 4 heads side by side, K and V hold 2.", d_k, d_v);
    plan.expect_steps = {StepName::scores, StepName::weights, StepName::out};
    plan.task("which KV head each query head reads: ⌊h / (H / H_kv)⌋").computed_notes = [](const Problem&, const Trace& trace) {
        return trace_notes(trace, NoteKind::kv_sharing);
    };
    plan.task("the scores of every query head against its KV head", {StepName::scores}).worked = {{cell(1, 0), 3}};
    plan.task("the weights and the output of every head", {StepName::weights, StepName::out}).worked = {{row(StepName::weights, 1), 3}};
    plan.task("how many numbers per token the KV cache holds, against multi-head attention with 4 KV heads").computed_notes = gqa_cache_notes;
    return plan;
}

ExercisePlan kv_cache(HandNumbers& numbers) {
    ExercisePlan plan = qkv_plan("Decoding with a KV cache", numbers, 3, 3);
    plan.problem["mask"] = "causal";
    plan.pipeline = "decode";
    plan.question = "Generate three tokens one at a time. At step t the new token's key and value are appended to the cache, and its query reads the whole cache.";
    plan.expect_steps = {StepName::weights, StepName::out};
    plan.task("for t = 0, 1, 2: the cache K and V after appending (t + 1 rows)", {StepName::k_cache, StepName::v_cache});
    plan.task("the query's scaled scores against the cache (Z, step masked), its weights and its output",
              {StepName::masked, StepName::weights, StepName::out});
    ExerciseTask& compare = plan.task("compare the stacked outputs with the full causal computation");
    compare.worked = {{row(StepName::weights, 2)}, {row(StepName::out, 2)}};
    compare.notes = {"Decoding computes row t of the causal weights at step t: the arithmetic above is the full computation's row 2, which step t = 2 "
                     "repeats."};
    compare.computed_notes = [](const Problem&, const Trace& trace) {
        return std::vector<std::string>{fmt::format("The outputs of the steps, stacked, differ from the full causal computation's by at most {:.2g} (as "
                                                    "attn-trace decode reports it): the same numbers.",
                                                    trace_number(trace, "max_abs_diff_vs_full"))};
    };
    CostQuestion model;
    model.layers = static_cast<std::uint64_t>(numbers.pick<int>({12, 24, 32}));
    model.kv_heads = static_cast<std::uint64_t>(numbers.pick<int>({4, 8}));
    model.heads = 4 * model.kv_heads;
    model.d_model = model.heads * static_cast<std::uint64_t>(numbers.pick<int>({64, 128}));
    model.bytes = 2;
    model.n = model.tokens = static_cast<std::uint64_t>(numbers.pick<int>({1024, 4096, 8192}));
    const CostAnswer cost = compute_cost(model);
    plan.task(fmt::format("the size of the cache for the model below: {} layers, {} KV heads of d_k = d_v = {}, {:g} bytes per number, {} tokens",
                          model.layers, model.kv_heads, cost.d_head, model.bytes, model.n))
        .notes = {fmt::format("Each layer caches, per token, a key and a value for each KV head: H_kv · (d_k + d_v) = {} · ({} + {}) = {} numbers. "
                              "Cache per token, as attn-trace cost counts it: 2 · layers · H_kv · d_k · bytes = 2 · {} · {} · {} · {:g} = {}; for {} tokens: {}.",
                              model.kv_heads, cost.d_head, cost.d_head, grouped(model.kv_heads * 2 * cost.d_head), model.layers, model.kv_heads, cost.d_head,
                              model.bytes, bytes_text(cost.kv_cache_bytes_per_token), model.n, bytes_text(cost.kv_cache_bytes_total))};
    return plan;
}

ExercisePlan tiled(HandNumbers& numbers) {
    ExercisePlan plan = qkv_plan("Tiles and the online softmax", numbers, 4, 4);
    plan.pipeline = "tiled";
    plan.question = "Compute attention for four tokens in tiles of 2 queries × 2 keys, never holding the 4 × 4 score matrix (FlashAttention's online softmax).";
    plan.expect_steps = {StepName::m, StepName::l, StepName::out};
    plan.task("for each query block and key tile: the tile's scaled scores", {StepName::masked});
    plan.task("the running max m; when it grows, the rescale factor e^(m_old − m_new)", {StepName::m, StepName::rescale});
    plan.task("the running sum ℓ and the running weighted sum u, both rescaled before the tile's terms are added", {StepName::l, StepName::u});
    ExerciseTask& out = plan.task("out = u / ℓ, and the same as the full computation", {StepName::out});
    out.worked = {{row(StepName::weights, 0)}};
    out.notes = {"The full computation's row 0 (above) gives the same weights as the tiles: ℓ at the end is the full row's sum of e^(z − max)."};
    out.computed_notes = [](const Problem& problem, const Trace& trace) {
        return std::vector<std::string>{
            fmt::format("The tiled outputs differ from the full computation's by at most {:.2g} (as attn-trace tiled reports it).",
                        trace_number(trace, "max_abs_diff_vs_full")),
            fmt::format("At most {:g} scores are held at once, against n · m = {} · {} = {:g} for the whole matrix.", trace_number(trace, "scores_held"),
                        problem.n, problem.m, trace_number(trace, "scores_full"))};
    };
    return plan;
}

ExercisePlan scale_topic(HandNumbers& numbers) {
    ExercisePlan plan = qkv_plan("Why divide by √d_k", numbers, 2, 3, 1, 1, {-2, -1, 1, 2}, {-2, -1, 0, 1, 2});
    plan.question = fmt::format("Queries and keys with larger numbers (d_k = {}). Compare softmax of the raw scores with softmax of the scaled scores.", d_k);
    plan.expect_steps = {StepName::scores, StepName::scaled, StepName::weights};
    plan.task("S = Q Kᵀ", {StepName::scores});
    plan.task("the weights without scaling, softmax(S)").unscaled_weights = true;
    plan.task("the weights with scaling, softmax(S / √d_k)", {StepName::scaled, StepName::weights}).worked = {{row(StepName::weights, 0)}};
    ExerciseTask& why = plan.task("which row is closer to picking a single key, and why that slows learning");
    why.computed_notes = [](const Problem& problem, const Trace& trace) {
        const Trace raw = unscaled_trace(problem);
        const Step* scaled = trace.find(StepName::weights, 0, std::nullopt, std::nullopt, std::nullopt);
        const Step* plain = raw.find(StepName::weights, 0, std::nullopt, std::nullopt, std::nullopt);
        std::vector<std::string> rows;
        for (std::size_t i = 0; i < plain->values.rows(); ++i) {
            double largest_plain = 0, largest_scaled = 0;
            for (std::size_t j = 0; j < plain->values.cols(); ++j) {
                largest_plain = std::max(largest_plain, plain->values(i, j));
                largest_scaled = std::max(largest_scaled, scaled->values(i, j));
            }
            rows.push_back(fmt::format("row {} ({}): {} without the scale, {} with it", i, row_label(*plain, i), format_rounded(largest_plain, 4),
                                       format_rounded(largest_scaled, 4)));
        }
        return std::vector<std::string>{
            fmt::format("The largest weight of each row: {}. Without the scale each row is closer to picking a single key.", fmt::join(rows, "; ")),
            "For random q and k with unit-variance entries, Var(q · k) = d_k: dividing by √d_k brings the spread back to 1 for every d_k.",
            "A saturated softmax (one weight near 1) has a Jacobian diag(p) − p pᵀ near 0, so almost no gradient reaches the scores."};
    };
    return plan;
}

ExercisePlan cost(HandNumbers& numbers) {
    ExercisePlan plan;
    plan.title = "What attention costs";
    // Two heads of d_k = 4, like every other topic: d = 8. The layer's count and the
    // problem are made from the same sizes.
    CostQuestion small;
    small.n = 3;
    small.heads = 2;
    small.d_model = small.heads * d_k;
    plan.problem["tokens"] = numbers.words(small.n);
    plan.problem["X"] = numbers.matrix(small.n, small.d_model, {0, 1});
    for (const char* w : {"W_Q", "W_K", "W_V", "W_O"}) plan.problem[w] = numbers.matrix(small.d_model, small.d_model, key_values);
    plan.problem["heads"] = small.heads;
    plan.question = fmt::format("A layer with d = {} and {} heads (d_k = d / H = {}) reads {} tokens. Count its shapes and its work; then scale the count up "
                                "to the model below.",
                                small.d_model, small.heads, d_k, small.n);
    plan.expect_steps = {StepName::q, StepName::scores, StepName::final};
    const CostAnswer layer = compute_cost(small);
    plan.task("the shapes of Q, K, V, each head's scores and weights, concat and final",
              {StepName::q, StepName::k, StepName::v, StepName::scores, StepName::weights, StepName::concat, StepName::final})
        .worked = {{cell(0, 0)}};
    plan.task("the parameters: 4 d² (no biases here) and 4 d² + 4 d with biases").notes = {
        fmt::format("4 d² = 4 · {}² = {}; with biases 4 d² + 4 d = {} + 4 · {} = {}.", small.d_model, layer.parameters_without_biases,
                    layer.parameters_without_biases, small.d_model, layer.parameters_with_biases)};
    plan.task("the multiply-adds: 4 · N · d² for the projections, 2 · N² · d for Q Kᵀ and A V").preformatted = "this layer:\n" + cost_text(layer);
    CostQuestion large;
    large.n = static_cast<std::uint64_t>(numbers.pick<int>({1024, 2048, 4096, 8192}));
    large.d_model = static_cast<std::uint64_t>(numbers.pick<int>({512, 768, 1024}));
    large.heads = static_cast<std::uint64_t>(numbers.pick<int>({8, 16}));
    plan.task(fmt::format("the same for the larger model, with the score memory and the length where N² wins: N = {}, d = {}, {} heads, float32", large.n,
                          large.d_model, large.heads))
        .preformatted = "the larger model:\n" + cost_text(compute_cost(large));
    return plan;
}

}  // namespace

std::map<std::string, TopicPlanner> core_topics() {
    return {{"scores", scores}, {"softmax", softmax}, {"causal", causal}, {"padding", padding}, {"multihead", multihead},
            {"gqa", gqa},       {"kv-cache", kv_cache}, {"tiled", tiled},   {"scale", scale_topic}, {"cost", cost}};
}

}  // namespace attn_trace::topic_plans
