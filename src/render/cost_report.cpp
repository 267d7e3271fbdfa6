// The cost calculator's answer as text for people and as JSON for scripts.
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn_trace/cost_report.hpp"
#include "attn_trace/number_text.hpp"
#include "attn_trace/size_text.hpp"

namespace attn_trace {

namespace {

std::string plural(std::uint64_t count, const char* word) { return fmt::format("{} {}{}", grouped(count), word, count == 1 ? "" : "s"); }

}  // namespace

std::string cost_text(const CostAnswer& a) {
    const CostQuestion& q = a.question;
    const bool sharing = q.kv_heads < q.heads;
    std::string t;
    t += fmt::format("attention cost of one layer: N = {}, d_model = {}, H = {} (d_k = d_v = {}), H_kv = {}{}, {:g} bytes per number\n",
                     plural(q.n, "token"), grouped(q.d_model), q.heads, a.d_head, q.kv_heads,
                     sharing ? (q.kv_heads == 1 ? " (multi-query)" : " (grouped-query)") : "", q.bytes);
    t += "counting: one multiply-add (a·b + c) counts 1; FLOPs that count the multiply and the add are twice as many; softmax left out\n";

    t += "\nmultiply-adds per layer\n";
    t += fmt::format("  projections  {} = {}   (Q and W_O: N·d² each; K and V: N·d·H_kv·d_k each)\n",
                     sharing ? "2·N·d² + 2·N·d·H_kv·d_k" : "4·N·d²", grouped(a.projection_multiply_adds));
    t += fmt::format("  attention    2·N²·d = {}   (Q Kᵀ and A V: H · N² · d_k each)\n", grouped(a.attention_multiply_adds));
    t += fmt::format("  total        {}   ({} FLOPs counting multiply and add)\n", grouped(a.total_multiply_adds),
                     grouped(static_cast<double>(a.total_multiply_adds) * 2));
    t += fmt::format("  the N² term overtakes when N > {} = {}: {}\n", sharing ? "d + H_kv·d_k" : "2·d", grouped(a.crossover_length),
                     a.attention_multiply_adds > a.projection_multiply_adds   ? "here attention dominates"
                     : a.attention_multiply_adds == a.projection_multiply_adds ? "here the two are equal"
                                                                                : "here the projections dominate");

    t += fmt::format("\nscore memory (N² per head, {:g} bytes each)\n", q.bytes);
    t += fmt::format("  per head     {} = {}\n", plural(a.scores_per_head, "score"), bytes_text(a.score_bytes_per_head));
    t += fmt::format("  per layer    {} ({} heads × {}) = {}\n", plural(a.scores_per_layer, "score"), q.heads, grouped(a.scores_per_head),
                     bytes_text(a.score_bytes_per_layer));
    t += "  (the softmax weights are a second matrix of the same size)\n";

    t += fmt::format("\nKV cache (2 · layers · H_kv · d_k · bytes per token, {} layer{})\n", q.layers, q.layers == 1 ? "" : "s");
    t += fmt::format("  per token    2 · {} · {} · {} = {} numbers = {}\n", q.layers, q.kv_heads, a.d_head, grouped(a.kv_cache_numbers_per_token),
                     bytes_text(a.kv_cache_bytes_per_token));
    t += fmt::format("  {}   {}\n", plural(q.tokens, "token"), bytes_text(a.kv_cache_bytes_total));
    if (sharing)
        t += fmt::format("  with {} KV heads instead of {}: {}× smaller than the {} per token of multi-head attention\n", q.kv_heads, q.heads,
                         q.heads / q.kv_heads, bytes_text(a.kv_cache_bytes_per_token_without_sharing));

    t += "\nparameters per layer (W_Q, W_K, W_V, W_O and their biases; the same for any number of heads)\n";
    t += fmt::format("  with biases     {} = {}\n", sharing ? "2d² + 2d·H_kv·d_k + 2d + 2·H_kv·d_k" : "4d² + 4d", grouped(a.parameters_with_biases));
    t += fmt::format("  without biases  {} = {}\n", sharing ? "2d² + 2d·H_kv·d_k" : "4d²", grouped(a.parameters_without_biases));
    if (q.layers > 1) t += fmt::format("  {} layers: {} with biases\n", q.layers, grouped(static_cast<double>(a.parameters_with_biases) * static_cast<double>(q.layers)));
    return t;
}

std::string cost_json(const CostAnswer& a) {
    const CostQuestion& q = a.question;
    nlohmann::ordered_json out = {
        {"attn_trace", 1},
        {"command", "cost"},
        {"counting", "multiply-adds: a·b + c counts 1 (FLOPs counting multiply and add separately are twice as many); softmax left out"},
        {"n", q.n},
        {"d_model", q.d_model},
        {"heads", q.heads},
        {"kv_heads", q.kv_heads},
        {"d_k", a.d_head},
        {"layers", q.layers},
        {"bytes", json_quantity(q.bytes)},
        {"tokens", q.tokens},
        {"projection_multiply_adds", a.projection_multiply_adds},
        {"attention_multiply_adds", a.attention_multiply_adds},
        {"total_multiply_adds", a.total_multiply_adds},
        {"scores_per_head", a.scores_per_head},
        {"scores_per_layer", a.scores_per_layer},
        {"score_bytes_per_head", json_quantity(a.score_bytes_per_head)},
        {"score_bytes_per_layer", json_quantity(a.score_bytes_per_layer)},
        {"kv_cache_numbers_per_token", a.kv_cache_numbers_per_token},
        {"kv_cache_bytes_per_token", json_quantity(a.kv_cache_bytes_per_token)},
        {"kv_cache_bytes_total", json_quantity(a.kv_cache_bytes_total)},
        {"kv_cache_bytes_per_token_without_sharing", json_quantity(a.kv_cache_bytes_per_token_without_sharing)},
        {"parameters_with_biases", a.parameters_with_biases},
        {"parameters_without_biases", a.parameters_without_biases},
        {"crossover_length", a.crossover_length},
    };
    return out.dump(1) + "\n";
}

std::string sparse_cost_text(const SparseCost& c) {
    const CostQuestion& q = c.question;
    std::string t = fmt::format("attention over a sparse pattern: {}, d_model = {}, H = {}, {:g} bytes per number, self-attention (n = m)\n", c.pattern,
                                grouped(q.d_model), q.heads, q.bytes);
    t += "counting: only the scored pairs are multiplied (Q Kᵀ and A V: 2 · scored pairs · d multiply-adds); score memory per head = scored pairs · bytes\n\n";
    t += fmt::format("{:>9}  {:>15}  {:>8}  {:>20}  {:>20}  {:>38}  {:>10}\n", "n", "scored pairs", "density", "attention mult-adds", "dense (2·N²·d)",
                     "scores per head", "vs dense");
    for (std::size_t r = 0; r < c.rows.size(); ++r) {
        const auto& row = c.rows[r];
        t += fmt::format("{:>9}  {:>15}  {:>8.4f}  {:>20}  {:>20}  {:>38}  {:>9.4g}×\n", grouped(row.n), grouped(row.scored_pairs), row.density,
                         grouped(row.attention_multiply_adds), grouped(row.dense_attention_multiply_adds), bytes_text(row.score_bytes_per_head),
                         static_cast<double>(row.dense_pairs) / static_cast<double>(std::max<std::uint64_t>(row.scored_pairs, 1)));
    }
    if (c.rows.size() > 1) {
        t += "\ngrowth from one length to the next (scored pairs; dense grows as the square of n)\n";
        for (std::size_t r = 1; r < c.rows.size(); ++r) {
            const auto &a = c.rows[r - 1], &b = c.rows[r];
            t += fmt::format("  n {} → {} ({:.4g}×): scored pairs {:.4g}×, dense {:.4g}×\n", grouped(a.n), grouped(b.n),
                             static_cast<double>(b.n) / static_cast<double>(a.n),
                             static_cast<double>(b.scored_pairs) / static_cast<double>(std::max<std::uint64_t>(a.scored_pairs, 1)),
                             static_cast<double>(b.dense_pairs) / static_cast<double>(a.dense_pairs));
        }
    }
    return t;
}

std::string sparse_cost_json(const SparseCost& c) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const auto& row : c.rows)
        rows.push_back({{"n", row.n},
                        {"scored_pairs", row.scored_pairs},
                        {"dense_pairs", row.dense_pairs},
                        {"density", row.density},
                        {"attention_multiply_adds", row.attention_multiply_adds},
                        {"dense_attention_multiply_adds", row.dense_attention_multiply_adds},
                        {"score_bytes_per_head", json_quantity(row.score_bytes_per_head)},
                        {"dense_score_bytes_per_head", json_quantity(row.dense_score_bytes_per_head)}});
    const nlohmann::ordered_json out = {{"attn_trace", 1}, {"command", "cost"},       {"sparse", c.pattern},      {"d_model", c.question.d_model},
                                        {"heads", c.question.heads}, {"bytes", json_quantity(c.question.bytes)}, {"lengths", rows}};
    return out.dump(1) + "\n";
}

std::string cache_comparison_text(const CacheComparison& c) {
    const CostQuestion& q = c.question;
    std::string t = fmt::format("KV cache per token: H = {} heads of d_h = {} (d_model = {}), H_kv = {} for GQA, MLA latent d_c = {} and RoPE key d_r = {}; "
                                "{} layer{}, {:g} bytes per number\n\n",
                                q.heads, c.d_head, grouped(q.d_model), q.kv_heads, c.d_c, c.d_r, q.layers, q.layers == 1 ? "" : "s", q.bytes);
    t += fmt::format("{:<5}  {:<18}  {:>14}  {:>42}  {:>9}\n", "", "cached per token", "per layer", "all layers", "vs MHA");
    const auto line = [&](const char* name, const std::string& formula, std::uint64_t elements) {
        const double all = static_cast<double>(elements) * static_cast<double>(q.layers) * q.bytes;
        return fmt::format("{:<5}  {:<18}  {:>14}  {:>42}  {:>8.4g}×\n", name, formula, grouped(elements) + " numbers", bytes_text(all),
                           static_cast<double>(c.mha) / static_cast<double>(elements));
    };
    t += line("MHA", "2·H·d_h", c.mha);
    t += line("GQA", "2·H_kv·d_h", c.gqa);
    t += line("MQA", "2·d_h", c.mqa);
    t += line("MLA", "d_c + d_r", c.mla);
    t += "\nMLA caches one latent c_kv (d_c) and one RoPE key k_rope (d_r) per token for all heads; each head's keys and values are "
         "recomputed from the latent (or W_UK is absorbed into the queries)\n";
    return t;
}

std::string cache_comparison_json(const CacheComparison& c) {
    const CostQuestion& q = c.question;
    const auto bytes = [&](std::uint64_t elements) { return json_quantity(static_cast<double>(elements) * static_cast<double>(q.layers) * q.bytes); };
    const nlohmann::ordered_json out = {
        {"attn_trace", 1},       {"command", "cost"},      {"d_model", q.d_model},  {"heads", q.heads},         {"kv_heads", q.kv_heads},
        {"d_head", c.d_head},    {"d_c", c.d_c},           {"d_r", c.d_r},          {"layers", q.layers},       {"bytes", json_quantity(q.bytes)},
        {"cache_elements_per_token_per_layer", {{"mha", c.mha}, {"gqa", c.gqa}, {"mqa", c.mqa}, {"mla", c.mla}}},
        {"cache_bytes_per_token", {{"mha", bytes(c.mha)}, {"gqa", bytes(c.gqa)}, {"mqa", bytes(c.mqa)}, {"mla", bytes(c.mla)}}}};
    return out.dump(1) + "\n";
}

std::string model_cost_text(const ModelCost& cost, const std::string& dir) {
    const auto& f = cost.facts;
    std::string t = fmt::format("attn-trace cost: {} ({}), {}, {:g} bytes per number, {} cached\n\n", dir, f.model_type, plural(f.layers.size(), "layer"),
                                f.bytes_per_number, plural(cost.tokens, "token"));
    t += fmt::format("{:>5}  {:<17}  {:>6}  {:>14}  {:>9}  {:>44}  {:>10}\n", "layer", "attention", "window", "numbers/token", "tokens", "cache", "parameters");
    for (std::size_t l = 0; l < f.layers.size(); ++l) {
        const auto& layer = f.layers[l];
        t += fmt::format("{:>5}  {:<17}  {:>6}  {:>14}  {:>9}  {:>44}  {:>10}\n", l, layer.layer_type, layer.window ? grouped(*layer.window) : "—",
                         grouped(layer.kv_numbers_per_token), grouped(cost.held[l]),
                         bytes_text(static_cast<double>(layer.kv_numbers_per_token) * f.bytes_per_number * static_cast<double>(cost.held[l])),
                         grouped(layer.attention_parameters));
    }
    t += fmt::format("\nKV cache, all layers\n  per token while every layer still caches it   {} numbers = {}\n", grouped(cost.kv_cache_numbers_per_token),
                     bytes_text(cost.kv_cache_bytes_per_token));
    t += fmt::format("  {}   {}  (a sliding layer holds at most its window)\n", plural(cost.tokens, "token"), bytes_text(cost.kv_cache_bytes_total));
    t += fmt::format("attention parameters, all layers   {} (the tensors each layer's attention reads, norms included)\n", grouped(cost.attention_parameters));
    return t;
}

std::string model_cost_json(const ModelCost& cost, const std::string& dir) {
    const auto& f = cost.facts;
    nlohmann::ordered_json layers = nlohmann::ordered_json::array();
    for (std::size_t l = 0; l < f.layers.size(); ++l) {
        const auto& layer = f.layers[l];
        layers.push_back({{"layer", l},
                          {"layer_type", layer.layer_type},
                          {"sliding_window", layer.window ? nlohmann::ordered_json(*layer.window) : nlohmann::ordered_json()},
                          {"kv_cache_numbers_per_token", layer.kv_numbers_per_token},
                          {"kv_cache_bytes_per_token", json_quantity(static_cast<double>(layer.kv_numbers_per_token) * f.bytes_per_number)},
                          {"kv_cache_tokens", cost.held[l]},
                          {"kv_cache_bytes_total", json_quantity(static_cast<double>(layer.kv_numbers_per_token) * f.bytes_per_number * static_cast<double>(cost.held[l]))},
                          {"attention_parameters", layer.attention_parameters}});
    }
    const nlohmann::ordered_json out = {{"attn_trace", 1},
                                        {"command", "cost"},
                                        {"model", dir},
                                        {"model_type", f.model_type},
                                        {"n", cost.n},
                                        {"tokens", cost.tokens},
                                        {"bytes", json_quantity(f.bytes_per_number)},
                                        {"kv_cache_numbers_per_token", cost.kv_cache_numbers_per_token},
                                        {"kv_cache_bytes_per_token", json_quantity(cost.kv_cache_bytes_per_token)},
                                        {"kv_cache_bytes_total", json_quantity(cost.kv_cache_bytes_total)},
                                        {"attention_parameters", cost.attention_parameters},
                                        {"layers", layers}};
    return out.dump(1) + "\n";
}

}  // namespace attn_trace
