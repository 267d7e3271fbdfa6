#pragma once
// The √d_k experiment (docs/COMMANDS.md#variance): for random queries and keys with N(0, 1)
// entries, how large q·k gets with and without 1/√d_k, and what that does to
// softmax (its largest weight, how often it saturates, how much gradient passes).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attn_trace {

struct VarianceOptions {
    std::vector<std::size_t> d_k = {4, 16, 64, 256, 1024};
    std::size_t samples = 20000;  // q·k pairs for the variance
    std::size_t queries = 2000;   // softmax rows ...
    std::size_t keys = 32;        // ... of this many keys each
    std::uint64_t seed = 0;
};

// One d_k. "unscaled" is softmax(q·k), "scaled" softmax(q·k / √d_k).
struct VarianceRow {
    std::size_t d_k = 0;
    double variance_unscaled = 0, variance_scaled = 0;              // sample variance of q·k and q·k/√d_k
    double largest_weight_unscaled = 0, largest_weight_scaled = 0;  // mean over the rows of max_j p_j
    double saturated_unscaled = 0, saturated_scaled = 0;            // share of rows with a weight above 0.99
    double gradient_unscaled = 0, gradient_scaled = 0;              // mean ‖diag(p) − p pᵀ‖_F
};

// Each d_k draws from its own stream (seed and d_k), so a row does not depend on
// which other d_k were asked for. Throws InputError for zero sizes or a request
// that would draw more than a few billion numbers.
std::vector<VarianceRow> measure_variance(const VarianceOptions& options);

std::string variance_text(const std::vector<VarianceRow>& rows, const VarianceOptions& options);
std::string variance_json(const std::vector<VarianceRow>& rows, const VarianceOptions& options);
// A log-log chart of Var(q·k) and Var(q·k/√d_k) against d_k, with the line Var = d_k.
std::string variance_svg(const std::vector<VarianceRow>& rows, const VarianceOptions& options);

}  // namespace attn_trace
