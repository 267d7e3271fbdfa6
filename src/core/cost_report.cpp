// The cost calculator's answer as text for people and as JSON for scripts.
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn_trace/cost.hpp"

namespace attn_trace {

namespace {

// 1050624 -> "1,050,624"
std::string grouped(std::uint64_t value) {
    std::string digits = std::to_string(value), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string grouped(double value) {
    return value == std::floor(value) && value < 1.8e19 ? grouped(static_cast<std::uint64_t>(value)) : fmt::format("{:.1f}", value);
}

std::string plural(std::uint64_t count, const char* word) { return fmt::format("{} {}{}", grouped(count), word, count == 1 ? "" : "s"); }

}  // namespace

// The natural decimal unit first (kB below a megabyte, GB above a gigabyte), the MB
// figure beside kB from 0.01 MB on (teaching texts tabulate score memory in MB), and
// the binary unit in parentheses from a MiB on: no "0.00 MB", no 2147.48 MB.
std::string bytes_text(double bytes) {
    if (bytes < 1e3) return fmt::format("{} bytes", grouped(bytes));
    std::string text = grouped(bytes) + " bytes = ";
    if (bytes < 1e6) {
        text += fmt::format("{:.4g} kB", bytes / 1e3);
        if (bytes >= 1e4) text += fmt::format(" = {:.2f} MB", bytes / 1e6);
        return text;
    }
    text += bytes < 1e9 ? fmt::format("{:.2f} MB", bytes / 1e6) : fmt::format("{:.2f} GB", bytes / 1e9);
    if (bytes >= (1 << 30)) text += fmt::format(" ({:.2f} GiB)", bytes / (1 << 30));
    else if (bytes >= (1 << 20)) text += fmt::format(" ({:.2f} MiB)", bytes / (1 << 20));
    return text;
}

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
                     q.n > a.crossover_length ? "here attention dominates" : "here the projections dominate");

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
        {"bytes", q.bytes},
        {"tokens", q.tokens},
        {"projection_multiply_adds", a.projection_multiply_adds},
        {"attention_multiply_adds", a.attention_multiply_adds},
        {"total_multiply_adds", a.total_multiply_adds},
        {"scores_per_head", a.scores_per_head},
        {"scores_per_layer", a.scores_per_layer},
        {"score_bytes_per_head", a.score_bytes_per_head},
        {"score_bytes_per_layer", a.score_bytes_per_layer},
        {"kv_cache_numbers_per_token", a.kv_cache_numbers_per_token},
        {"kv_cache_bytes_per_token", a.kv_cache_bytes_per_token},
        {"kv_cache_bytes_total", a.kv_cache_bytes_total},
        {"kv_cache_bytes_per_token_without_sharing", a.kv_cache_bytes_per_token_without_sharing},
        {"parameters_with_biases", a.parameters_with_biases},
        {"parameters_without_biases", a.parameters_without_biases},
        {"crossover_length", a.crossover_length},
    };
    return out.dump(1) + "\n";
}

}  // namespace attn_trace
