// One plan per exercise topic. Queries and keys have d_k = 4 in every topic, so
// the scale is exactly 1/2 and every scaled score is a whole number or a half.
// Counts (cache sizes, FLOPs, parameters) come from compute_cost and pipeline_decode,
// the functions behind `cost` and `decode`, never from a formula written here.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attn_trace/cost.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/attention_parts.hpp"
#include "attn_trace/exercise.hpp"
#include "attn_trace/permutation.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/render.hpp"
#include "exercise_plan.hpp"

namespace attn_trace {

namespace {

const std::vector<double> query_values = {-1, 0, 1, 2};
const std::vector<double> key_values = {-1, 0, 1};
const std::vector<double> value_values = {0, 1, 2, 3};
constexpr std::size_t d_k = 4, d_v = 2;

const std::vector<std::string> word_pool = {"the", "cat", "sat", "on", "mat", "a", "dog", "ran", "home", "late", "my", "card",
                                            "was", "charged", "twice", "please", "fix", "it", "now", "order", "arrived", "broken"};

// Q (n, heads·d_k), K and V (m, kv_heads·d_k / ·d_v) and the token labels.
void add_qkv(ExercisePlan& plan, HandNumbers& numbers, std::size_t n, std::size_t m, int heads = 1, int kv_heads = 1,
             const std::vector<double>& queries = query_values, const std::vector<double>& keys = key_values) {
    plan.problem["tokens"] = numbers.words(std::max(n, m));
    if (n != m) {
        // Keys beyond the queries get their own labels (the loader labels keys only when m = n).
        plan.problem["source_tokens"] = plan.problem["tokens"];
        plan.problem["tokens"].erase(plan.problem["tokens"].begin() + static_cast<long>(n), plan.problem["tokens"].end());
    }
    plan.problem["Q"] = numbers.matrix(n, static_cast<std::size_t>(heads) * d_k, queries);
    plan.problem["K"] = numbers.matrix(m, static_cast<std::size_t>(kv_heads) * d_k, keys);
    plan.problem["V"] = numbers.matrix(m, static_cast<std::size_t>(kv_heads) * d_v, value_values);
    if (heads > 1) plan.problem["heads"] = heads;
    if (kv_heads != heads) plan.problem["kv_heads"] = kv_heads;
}

// A number the pipeline reported (trace.numbers); a missing one is a bug here, not bad input.
double trace_number(const Trace& trace, const std::string& name) {
    for (const auto& [key, value] : trace.numbers)
        if (key == name) return value;
    throw std::logic_error("exercise: the trace has no number " + name);
}

// The trace's own notes of one kind (how query heads share KV heads, ...), as the trace prints them.
std::vector<std::string> trace_notes(const Trace& trace, const std::string& kind) {
    std::vector<std::string> out;
    for (const Note* note : trace.notes_of(kind)) out.push_back(note_text(*note));
    return out;
}

std::string cell(std::size_t i, std::size_t j) { return fmt::format("scores[{},{}]", i, j); }
std::string row(const std::string& step, std::size_t i) { return fmt::format("{}[{}]", step, i); }

ExercisePlan scores(HandNumbers& numbers) {
    ExercisePlan plan;
    plan.title = "Scores: Q Kᵀ and the scale";
    add_qkv(plan, numbers, 3, 3);
    plan.question = fmt::format("Three tokens have the queries Q and the keys K below, one row per token (d_k = {}). Compute every score and scale it.", d_k);
    plan.tasks = {fmt::format("S = Q Kᵀ, a (3, 3) matrix: S_ij = q_i · k_j, the sum of {} products", d_k),
                  fmt::format("the scale s = 1/√d_k = 1/√{}, and the scaled scores s·S", d_k)};
    plan.expect_steps = plan.answer_steps = {"scores", "scaled"};
    plan.worked = {{cell(static_cast<std::size_t>(numbers.integer(0, 2)), static_cast<std::size_t>(numbers.integer(0, 2)))}};
    return plan;
}

ExercisePlan softmax(HandNumbers& numbers) {
    ExercisePlan plan;
    plan.title = "Softmax row by row, then the weighted sum";
    add_qkv(plan, numbers, 3, 3);
    plan.question = fmt::format("Three tokens have the queries, keys and values below (d_k = {}, no mask). Compute the attention weights and the outputs.", d_k);
    plan.tasks = {"the scaled scores Q Kᵀ / √d_k", "for each row: its max, e^(z − max) for every key, their sum, and the weights",
                  "check that every row of weights adds up to 1", "the outputs O = A V"};
    plan.expect_steps = {"scaled", "weights", "out"};
    plan.answer_steps = {"scaled", "row_max", "exp", "row_sum", "weights", "out"};
    const auto r = static_cast<std::size_t>(numbers.integer(0, 2));
    plan.worked = {{row("weights", r)}, {row("out", r)}};
    return plan;
}

ExercisePlan causal(HandNumbers& numbers) {
    ExercisePlan plan;
    plan.title = "The causal mask";
    add_qkv(plan, numbers, 3, 3);
    plan.problem["mask"] = "causal";
    plan.question = "Three tokens of a decoder read only themselves and the tokens before them (a causal mask). Compute the weights and outputs.";
    plan.tasks = {"the mask M: 0 where token i may read token j (j ≤ i), −∞ above the diagonal", "the masked scores Q Kᵀ / √d_k + M",
                  "the weights, row by row (why is the first row (1, 0, 0)?)", "the outputs O = A V"};
    plan.expect_steps = {"mask", "masked", "weights", "out"};
    plan.answer_steps = {"scaled", "mask", "masked", "weights", "out"};
    const auto r = static_cast<std::size_t>(numbers.integer(1, 2));
    plan.worked = {{row("weights", r)}, {row("out", r)}};
    plan.notes = {"A masked key gets the score −∞ and the weight e^(−∞) = 0 exactly; the visible keys share the whole weight of 1."};
    return plan;
}

ExercisePlan padding(HandNumbers& numbers) {
    ExercisePlan plan;
    plan.title = "Padding: keys that are not there";
    add_qkv(plan, numbers, 4, 4);
    const auto padded = numbers.integer(1, 2);
    std::vector<int> valid(4, 1);
    for (std::int64_t k = 0; k < padded; ++k) valid[3 - static_cast<std::size_t>(k)] = 0;
    for (std::int64_t k = 0; k < padded; ++k) plan.problem["tokens"][3 - static_cast<std::size_t>(k)] = "<pad>";
    plan.problem["mask"] = {{"key_valid", valid}};
    plan.question = fmt::format("A sequence of {} tokens was padded to length 4 with {} <pad> token{}. No token may read the padding.", 4 - padded,
                                padded, padded == 1 ? "" : "s");
    plan.tasks = {"the padding mask M: −∞ in the columns of the <pad> keys", "the weights of every row (the <pad> rows too: they read the real tokens)",
                  "the outputs O = A V"};
    plan.expect_steps = {"mask", "weights", "out"};
    plan.answer_steps = {"scaled", "mask", "weights", "out"};
    plan.worked = {{row("weights", 0)}, {row("out", 0)}};
    plan.notes = {"The outputs of the <pad> rows are computed but thrown away later (the loss ignores them)."};
    return plan;
}

ExercisePlan multihead(HandNumbers& numbers) {
    ExercisePlan plan;
    plan.title = "Two heads, concatenated and mixed by W_O";
    add_qkv(plan, numbers, 3, 3, 2, 2);
    plan.problem["W_O"] = numbers.matrix(2 * d_v, 2, key_values);
    plan.question = fmt::format("Q, K and V hold two heads side by side: head 0 uses columns 0–{} of Q and K (0–{} of V), head 1 the next ones.", d_k - 1,
                                d_v - 1);
    plan.tasks = {"split Q, K, V into the two heads", fmt::format("the weights of each head (d_k = {}, scale 1/√d_k)", d_k),
                  fmt::format("each head's output A_h V_h, (3, {})", d_v), fmt::format("concat = [O_0 O_1], (3, {})", 2 * d_v), "final = concat W_O, (3, 2)"};
    plan.expect_steps = {"weights", "out", "concat", "final"};
    plan.answer_steps = {"scaled", "weights", "out", "concat", "final"};
    const auto r = static_cast<std::size_t>(numbers.integer(0, 2));
    plan.worked = {{row("weights", r), 1}, {row("out", r), 1}};
    return plan;
}

// Which KV head each query head reads (the trace's note), and the cache per token
// and layer as `decode` counts it: a key of d_k and a value of d_v per KV head.
std::vector<std::string> gqa_cache_notes(const Problem& problem, const Trace& trace) {
    std::vector<std::string> notes = trace_notes(trace, "kv_sharing");
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
    ExercisePlan plan;
    plan.title = "Grouped-query attention: 4 query heads, 2 KV heads";
    add_qkv(plan, numbers, 2, 2, 4, 2);
    plan.question = fmt::format("Two tokens, 4 query heads and 2 key/value heads (d_k = {}, d_v = {}). Q holds 4 heads side by side, K and V hold 2.", d_k, d_v);
    plan.tasks = {"which KV head each query head reads: ⌊h / (H / H_kv)⌋", "the scores of every query head against its KV head",
                  "the weights and the output of every head",
                  "how many numbers per token the KV cache holds, against multi-head attention with 4 KV heads"};
    plan.expect_steps = {"scores", "weights", "out"};
    plan.answer_steps = {"scores", "weights", "out"};
    plan.worked = {{cell(1, 0), 3}, {row("weights", 1), 3}};
    plan.computed_notes = gqa_cache_notes;
    return plan;
}

ExercisePlan kv_cache(HandNumbers& numbers) {
    ExercisePlan plan;
    plan.title = "Decoding with a KV cache";
    add_qkv(plan, numbers, 3, 3);
    plan.problem["mask"] = "causal";
    plan.pipeline = "decode";
    plan.question = "Generate three tokens one at a time. At step t the new token's key and value are appended to the cache, and its query reads the whole cache.";
    plan.tasks = {"for t = 0, 1, 2: the cache K and V after appending (t + 1 rows)", "the query's scores against the cache, its weights and its output",
                  "compare the stacked outputs with the full causal computation", "the size of the cache for the model below"};
    plan.expect_steps = {"weights", "out"};
    plan.answer_steps = {"k_cache", "v_cache", "weights", "out"};
    plan.worked = {{row("weights", 2)}, {row("out", 2)}};
    CostQuestion model;
    model.layers = static_cast<std::uint64_t>(numbers.pick<int>({12, 24, 32}));
    model.kv_heads = static_cast<std::uint64_t>(numbers.pick<int>({4, 8}));
    model.heads = 4 * model.kv_heads;
    model.d_model = model.heads * static_cast<std::uint64_t>(numbers.pick<int>({64, 128}));
    model.bytes = 2;
    model.n = model.tokens = static_cast<std::uint64_t>(numbers.pick<int>({1024, 4096, 8192}));
    const CostAnswer cost = compute_cost(model);
    plan.tasks.back() += fmt::format(": {} layers, {} KV heads of d_k = d_v = {}, {:g} bytes per number, {} tokens", model.layers, model.kv_heads, cost.d_head,
                                     model.bytes, model.n);
    plan.notes = {"Decoding computes row t of the causal weights at step t: the arithmetic above is the full computation's row 2, which step t = 2 repeats.",
                  fmt::format("Cache per token, as attn-trace cost counts it: 2 · layers · H_kv · d_k · bytes = 2 · {} · {} · {} · {:g} = {}; for {} tokens: {}.",
                              model.layers, model.kv_heads, cost.d_head, model.bytes, bytes_text(cost.kv_cache_bytes_per_token), model.n,
                              bytes_text(cost.kv_cache_bytes_total))};
    return plan;
}

ExercisePlan tiled(HandNumbers& numbers) {
    ExercisePlan plan;
    plan.title = "Tiles and the online softmax";
    add_qkv(plan, numbers, 4, 4);
    plan.pipeline = "tiled";
    plan.question = "Compute attention for four tokens in tiles of 2 queries × 2 keys, never holding the 4 × 4 score matrix (FlashAttention's online softmax).";
    plan.tasks = {"for each query block and key tile: the tile's scaled scores", "the running max m; when it grows, the rescale factor e^(m_old − m_new)",
                  "the running sum ℓ and the running weighted sum u, both rescaled before the tile's terms are added", "out = u / ℓ, and the same as the full computation"};
    plan.expect_steps = {"m", "l", "out"};
    plan.answer_steps = {"scores", "m", "rescale", "l", "u", "out"};
    plan.worked = {{row("weights", 0)}};
    plan.notes = {"The full computation's row 0 (above) gives the same weights as the tiles: ℓ at the end is the full row's sum of e^(z − max)."};
    plan.computed_notes = [](const Problem& problem, const Trace& trace) {
        return std::vector<std::string>{fmt::format("At most {:g} scores are held at once, against n · m = {} · {} = {:g} for the whole matrix.",
                                                    trace_number(trace, "scores_held"), problem.n, problem.m, trace_number(trace, "scores_full"))};
    };
    return plan;
}

ExercisePlan scale_topic(HandNumbers& numbers) {
    ExercisePlan plan;
    plan.title = "Why divide by √d_k";
    add_qkv(plan, numbers, 2, 3, 1, 1, {-2, -1, 1, 2}, {-2, -1, 0, 1, 2});
    plan.question = fmt::format("Queries and keys with larger numbers (d_k = {}). Compare softmax of the raw scores with softmax of the scaled scores.", d_k);
    plan.tasks = {"S = Q Kᵀ", "the weights without scaling, softmax(S)", "the weights with scaling, softmax(S / √d_k)",
                  "which row is closer to picking a single key, and why that slows learning"};
    plan.expect_steps = {"scores", "scaled", "weights"};
    plan.answer_steps = {"scores", "scaled", "weights"};
    plan.compare_unscaled = true;
    plan.worked = {{row("weights", 0)}};
    plan.notes = {"For random q and k with unit-variance entries, Var(q · k) = d_k: dividing by √d_k brings the spread back to 1 for every d_k.",
                  "A saturated softmax (one weight near 1) has a Jacobian diag(p) − p pᵀ near 0, so almost no gradient reaches the scores."};
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
    plan.tasks = {"the shapes of Q, K, V, each head's scores and weights, concat and final",
                  "the parameters: 4 d² (no biases here) and 4 d² + 4 d with biases",
                  "the multiply-adds: 4 · N · d² for the projections, 2 · N² · d for Q Kᵀ and A V", "the same for the larger model, with the score memory and the length where N² wins"};
    plan.expect_steps = {"q", "scores", "final"};
    plan.answer_steps = {"q", "k", "v", "scores", "weights", "concat", "final"};
    plan.worked = {{cell(0, 0)}};
    CostQuestion large;
    large.n = static_cast<std::uint64_t>(numbers.pick<int>({1024, 2048, 4096, 8192}));
    large.d_model = static_cast<std::uint64_t>(numbers.pick<int>({512, 768, 1024}));
    large.heads = static_cast<std::uint64_t>(numbers.pick<int>({8, 16}));
    plan.tasks.back() += fmt::format(": N = {}, d = {}, {} heads, float32", large.n, large.d_model, large.heads);
    plan.preformatted = "this layer:\n" + cost_text(compute_cost(small)) + "\nthe larger model:\n" + cost_text(compute_cost(large));
    return plan;
}

// "(0, 1, 1), (0, 1, 0)": a small matrix's rows written inline.
std::string inline_rows(const Matrix& m) {
    std::vector<std::string> rows;
    for (std::size_t i = 0; i < m.rows(); ++i) {
        std::vector<std::string> cells;
        for (std::size_t j = 0; j < m.cols(); ++j) cells.push_back(fmt::format("{:.4g}", m(i, j)));
        rows.push_back(fmt::format("({})", fmt::join(cells, ", ")));
    }
    return fmt::format("{}", fmt::join(rows, ", "));
}

// A Longformer-style pattern on six tokens
// (docs/FAMILY.md#longformer-a-window-and-one-global-token).
ExercisePlan sparse_topic(HandNumbers& numbers) {
    ExercisePlan plan;
    plan.title = "A sparse pattern: which pairs are scored, and what two layers reach";
    add_qkv(plan, numbers, 6, 6);
    const auto global = numbers.integer(0, 1) == 0 ? 0 : 5;
    plan.problem["sparse"] = {{"window", {{"left", 1}, {"right", 1}}}, {"global", {global}}};
    plan.question = fmt::format("Six tokens attend through a Longformer-style pattern: each token reads its neighbours (a window of one token on each "
                                "side) and token {} is global (it reads every token and every token reads it). No other pair is scored.",
                                global);
    plan.tasks = {"the mask M: 0 for each scored pair, −∞ elsewhere; how many pairs are scored, out of 36?",
                  "reach: through how many stacked layers does each key reach each query? Which pairs need two layers?",
                  "the weights (exactly 0 off the pattern) and the outputs O = A V"};
    plan.expect_steps = {"mask", "reach", "weights", "out"};
    plan.answer_steps = {"mask", "reach", "weights", "out"};
    plan.worked = {{row("weights", 3)}};
    plan.computed_notes = [](const Problem&, const Trace& trace) {
        return std::vector<std::string>{fmt::format(
            "The pattern scores {} of the 36 pairs (density {:.3g}); every pair is connected within {} layers, because any two tokens share the "
            "global token as a neighbour of both.",
            trace_number(trace, "scored_pairs"), trace_number(trace, "density"), trace_number(trace, "reach_max"))};
    };
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
    plan.tasks = {"c_kv = X W_DKV, then k = c_kv W_UK and v = c_kv W_UV", "q = X W_Q, the scores q kᵀ, the causal weights and the outputs",
                  "the absorbed form: q_latent = q W_UKᵀ, and check that q_latent c_kvᵀ equals the scores",
                  "what the cache holds per token, against multi-head attention's k and v"};
    plan.expect_steps = {"c_kv", "k", "v", "q_latent", "scores", "weights", "out"};
    plan.answer_steps = {"c_kv", "q", "k", "v", "q_latent", "scores", "weights", "out"};
    plan.worked = {{"k[1,0]"}, {cell(2, 1)}};
    plan.computed_notes = [](const Problem& problem, const Trace& trace) {
        // The cache sizes as decode counts them.
        const Trace decode = pipeline_decode(problem, RunOptions{}, DecodeOptions{});
        const double bytes = trace_number(decode, "kv_cache_bytes_per_number");
        return std::vector<std::string>{
            fmt::format("The absorbed scores differ from the explicit ones by {:.2g}: W_UK can be folded into the query, so the keys never need to be "
                        "expanded.",
                        trace_number(trace, "max_abs_diff_absorbed")),
            fmt::format("Per token and layer the cache holds c_kv: {:g} numbers, where multi-head attention with this head would hold k and v: {:g} "
                        "(as attn-trace decode counts them).",
                        trace_number(decode, "kv_cache_elements_per_token"), trace_number(decode, "kv_cache_bytes_per_token_without_mla") / bytes)};
    };
    return plan;
}

// Dropout on the weights, with the keep matrix given
// (docs/FAMILY.md#dropout-on-the-weights-and-the-traineval-trap).
ExercisePlan dropout_topic(HandNumbers& numbers) {
    ExercisePlan plan;
    plan.title = "Dropout on the attention weights, and the train/eval trap";
    add_qkv(plan, numbers, 3, 3);
    const auto seed = numbers.integer(0, 1000);
    plan.problem["dropout"] = {{"p", 0.5}, {"seed", seed}, {"mode", "train"}};
    // The keep matrix is given in the question: the draws are the generator's, not the student's.
    const Problem problem = parse_problem(plan.problem.dump(), "exercise");
    plan.question = fmt::format("In training, dropout with p = 0.5 zeroes each attention weight with probability p and divides the kept ones by 1 − p. "
                                "This step's draws kept the weights where keep is 1; keep has the rows {}.",
                                inline_rows(DropoutDraws(problem).keep(0, 0, {0, problem.n})));
    plan.tasks = {"the weights A (no mask)", "dropped = A ⊙ keep / (1 − p); do its rows still add up to 1?", "the outputs O = dropped V",
                  "what the same layer computes in eval mode"};
    plan.expect_steps = {"weights", "keep", "dropped", "out"};
    plan.answer_steps = {"weights", "keep", "dropped", "out"};
    plan.worked = {{"dropped[0,1]"}, {row("out", 0)}};
    plan.notes = {"In eval mode nothing is dropped and out = A V. F.scaled_dot_product_attention applies its dropout_p whatever the module's mode, "
                  "so a module passes dropout_p = p if self.training else 0.0: forgetting it drops weights at inference."};
    return plan;
}

// Shuffle the tokens of an unmasked, position-free layer
// (docs/FAMILY.md#the-permutation-experiment).
ExercisePlan permutation_topic(HandNumbers& numbers) {
    ExercisePlan plan;
    plan.title = "The permutation experiment: attention treats its tokens as a set";
    add_qkv(plan, numbers, 3, 3);
    plan.question = "Three tokens, no mask and no positions. Compute the outputs; then reorder the tokens as P = (2, 0, 1) (the new row i is the old "
                    "row P[i]) and compute them again.";
    plan.tasks = {"the weights and the outputs O = A V", "the outputs for the reordered tokens: are they new numbers, or the old rows reordered?",
                  "which of a causal mask, RoPE or ALiBi would change the answer, and why"};
    plan.expect_steps = {"weights", "out"};
    plan.answer_steps = {"scaled", "weights", "out"};
    plan.worked = {{row("out", 0)}};
    plan.computed_notes = [](const Problem& problem, const Trace&) {
        const Trace permuted = permutation_trace(problem, RunOptions{}, {{2, 0, 1}, false});
        const Step* moved = permuted.find("out_of_permuted", 0, std::nullopt, std::nullopt, std::nullopt);
        return std::vector<std::string>{
            fmt::format("With the tokens reordered the outputs are {}: the rows of O in the order 2, 0, 1, unchanged in value (largest difference {:.2g}, "
                        "as attn-trace permute reports).",
                        inline_rows(moved->values), trace_number(permuted, "max_abs_diff_equivariance")),
            "A causal mask, a window, RoPE at fixed positions or ALiBi ties scores to positions, which stay put while the tokens move: then the "
            "outputs change value, and attn-trace permute names the cause."};
    };
    return plan;
}

// One head backward, with a hand-sized d_out (docs/COMMANDS.md#grad).
ExercisePlan grad_topic(HandNumbers& numbers) {
    ExercisePlan plan;
    plan.title = "The backward pass: from dL/dO to dL/dQ, dL/dK, dL/dV";
    add_qkv(plan, numbers, 2, 2);
    plan.problem["mask"] = "causal";
    plan.problem["d_out"] = numbers.matrix(2, d_v, {-1, 0, 1});
    plan.pipeline = "grad";
    plan.question = fmt::format("Two tokens of a decoder (causal mask, d_k = {}). The loss L adds up every cell of the output O times the matching cell "
                                "of the matrix d_out given below. Compute the gradient of L with respect to Q, K and V, step by step.",
                                d_k);
    plan.tasks = {"the forward weights A and the outputs O = A V", "grad_v = Aᵀ d_out and grad_weights = d_out Vᵀ",
                  "the softmax backward grad_masked: in each row, subtract from grad_weights the row's sum of grad_weights times A, "
                  "then multiply by A, cell by cell; why is the first row 0?",
                  "grad_scores = s · grad_masked, then grad_q = grad_scores K and grad_k = grad_scoresᵀ Q"};
    plan.expect_steps = {"grad_v", "grad_weights", "grad_masked", "grad_q", "grad_k"};
    plan.answer_steps = {"grad_out", "grad_v", "grad_weights", "grad_masked", "grad_scores", "grad_q", "grad_k"};
    plan.worked = {{row("weights", 1)}, {"grad_masked[1,0]"}, {"grad_q[1,0]"}, {"grad_k[0,0]"}};
    plan.notes = {"Row 0 reads only key 0, so its weight is 1 whatever its score: a softmax of one visible key passes no gradient to the scores, "
                  "and the blocked cell passes exactly 0.",
                  "Each row of grad_masked sums to 0: the softmax only redistributes weight among the keys a row reads."};
    return plan;
}

}  // namespace

nlohmann::ordered_json HandNumbers::matrix(std::size_t rows, std::size_t cols, const std::vector<double>& values) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < rows; ++i) {
        std::vector<double> row;
        do {
            row.clear();
            for (std::size_t j = 0; j < cols; ++j) row.push_back(pick(values));
        } while (std::all_of(row.begin(), row.end(), [](double x) { return x == 0; }) && cols > 1);
        nlohmann::ordered_json json_row = nlohmann::ordered_json::array();
        // Whole numbers as integers, so the file reads 2 rather than 2.0.
        for (double x : row) x == std::floor(x) ? json_row.push_back(static_cast<std::int64_t>(x)) : json_row.push_back(x);
        out.push_back(std::move(json_row));
    }
    return out;
}

std::vector<std::string> HandNumbers::words(std::size_t n) {
    std::vector<std::string> pool = word_pool, out;
    for (std::size_t k = 0; k < n; ++k) {
        const auto at = static_cast<std::size_t>(integer(0, static_cast<std::int64_t>(pool.size()) - 1));
        out.push_back(pool[at]);
        pool.erase(pool.begin() + static_cast<long>(at));
    }
    return out;
}

ExercisePlan plan_exercise(const std::string& topic, HandNumbers& numbers) {
    static const std::map<std::string, std::function<ExercisePlan(HandNumbers&)>> planners = {
        {"scores", scores}, {"softmax", softmax}, {"causal", causal}, {"padding", padding}, {"multihead", multihead},
        {"gqa", gqa},       {"kv-cache", kv_cache}, {"tiled", tiled}, {"scale", scale_topic},     {"cost", cost},
        {"sparse", sparse_topic}, {"mla", mla_topic}, {"dropout", dropout_topic}, {"permutation", permutation_topic}, {"grad", grad_topic}};
    const auto planner = planners.find(topic);
    if (planner == planners.end()) throw InputError(fmt::format("⟦topic⟧ '{}': expected one of {}", topic, fmt::join(exercise_topics(), ", ")));
    return planner->second(numbers);
}

}  // namespace attn_trace
