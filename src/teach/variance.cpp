// The √d_k experiment. Scores go through the backend's q Kᵀ and the trace's own
// softmax (attention_parts), so the experiment measures the code the tool runs.
#include "attn_trace/variance.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "attn_trace/attention_parts.hpp"
#include "attn_trace/parallel.hpp"
#include "attn_trace/backend.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/random.hpp"

namespace attn_trace {

namespace {

// Past this many random numbers the run takes minutes: refuse rather than hang.
constexpr double max_draws = 4e9;
constexpr double saturation = 0.99;

Matrix normal_matrix(PortableRandom& random, std::size_t rows, std::size_t cols) {
    Matrix m(rows, cols);
    draw(random, RandomDraw{}, m.data());
    return m;
}

// Unbiased sample variance, two passes (the mean first) for accuracy.
double sample_variance(const std::vector<double>& x) {
    double mean = 0;
    for (double v : x) mean += v;
    mean /= static_cast<double>(x.size());
    double squares = 0;
    for (double v : x) squares += (v - mean) * (v - mean);
    return squares / static_cast<double>(x.size() - 1);
}

struct SoftmaxSummary {
    double largest_weight = 0, saturated = 0, gradient = 0;
};

// z (rows, keys) → the means over the rows of max_j p_j, [max_j p_j > 0.99] and ‖J‖_F,
// where J = diag(p) − p pᵀ, so ‖J‖_F² = Σ_i (p_i − p_i²)² + Σ_{i≠j} p_i² p_j²
//                                   = Σ_i (p_i − p_i²)² + (Σ_i p_i²)² − Σ_i p_i⁴.
SoftmaxSummary summarise_softmax(const Matrix& z) {
    const Matrix p = softmax_rows(z, EmptyRows::error, Dtype::f64).weights;
    SoftmaxSummary s;
    for (std::size_t r = 0; r < p.rows(); ++r) {
        double largest = 0, diagonal = 0, squares = 0, fourths = 0;
        for (std::size_t j = 0; j < p.cols(); ++j) {
            const double pj = p(r, j);
            largest = std::max(largest, pj);
            diagonal += (pj - pj * pj) * (pj - pj * pj);
            squares += pj * pj;
            fourths += pj * pj * pj * pj;
        }
        s.largest_weight += largest;
        s.saturated += largest > saturation ? 1 : 0;
        s.gradient += std::sqrt(std::max(0.0, diagonal + squares * squares - fourths));
    }
    const double rows = static_cast<double>(p.rows());
    return {s.largest_weight / rows, s.saturated / rows, s.gradient / rows};
}

// The draws are cut into fixed blocks, each with its own generator seeded by
// (seed, d_k, block): the numbers are the same whatever the number of threads, and
// the blocks run in parallel (the portable logarithm behind normal() is what costs).
constexpr std::size_t pairs_per_block = 2500, rows_per_block = 250;

struct Experiment {
    std::size_t d_k;
    std::vector<double> dots;  // q·k of each pair
    Matrix scores;             // (queries, keys): each query against its own keys
};

struct Block {
    Experiment* experiment;
    bool pairs;  // a block of q·k pairs, or of softmax rows
    std::size_t first, count, index;
};

void run_block(const Block& b, const VarianceOptions& o, const Backend& backend) {
    Experiment& e = *b.experiment;
    PortableRandom random((o.seed * 1000003 + e.d_k) * 4099 + b.index * 2 + (b.pairs ? 0 : 1));
    for (std::size_t k = b.first; k < b.first + b.count; ++k) {
        if (b.pairs) {
            const Matrix q = normal_matrix(random, 1, e.d_k), key = normal_matrix(random, 1, e.d_k);
            e.dots[k] = backend.multiply_transposed(q, key, Dtype::f64)(0, 0);
        } else {
            const Matrix q = normal_matrix(random, 1, e.d_k), keys = normal_matrix(random, o.keys, e.d_k);
            const Matrix scores = backend.multiply_transposed(q, keys, Dtype::f64);
            std::copy(scores.row(0), scores.row(0) + o.keys, e.scores.row(k));
        }
    }
}

void run_blocks(const std::vector<Block>& blocks, const VarianceOptions& o, const Backend& backend) {
    parallel_for(blocks.size(), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())),
                 [&](std::size_t k, int) { run_block(blocks[k], o, backend); });
}

VarianceRow summarise(const Experiment& e) {
    const double s = 1.0 / std::sqrt(static_cast<double>(e.d_k));
    std::vector<double> scaled(e.dots.size());
    for (std::size_t k = 0; k < e.dots.size(); ++k) scaled[k] = s * e.dots[k];
    const SoftmaxSummary unscaled = summarise_softmax(e.scores), with_scale = summarise_softmax(scale(e.scores, s, Dtype::f64));
    return {e.d_k, sample_variance(e.dots), sample_variance(scaled), unscaled.largest_weight, with_scale.largest_weight,
            unscaled.saturated, with_scale.saturated, unscaled.gradient, with_scale.gradient};
}

}  // namespace

std::vector<VarianceRow> measure_variance(const VarianceOptions& o) {
    if (o.d_k.empty() || std::find(o.d_k.begin(), o.d_k.end(), std::size_t{0}) != o.d_k.end())
        throw InputError("⟦dk⟧: give one or more key sizes, each at least 1 (e.g. 4,16,64)");
    if (o.samples < 2) throw InputError("⟦samples⟧: a variance needs at least 2 pairs");
    if (o.queries < 1 || o.keys < 1) throw InputError("⟦queries⟧ and ⟦keys⟧ must be at least 1");
    double draws = 0;
    for (std::size_t d : o.d_k) draws += static_cast<double>(d) * (2.0 * static_cast<double>(o.samples) + static_cast<double>(o.queries) * static_cast<double>(o.keys + 1));
    if (draws > max_draws)
        throw InputError(fmt::format("this would draw {:.3g} random numbers (the limit is {:.0g}): use fewer ⟦samples⟧, ⟦queries⟧ or smaller ⟦dk⟧", draws, max_draws));
    std::vector<Experiment> experiments;
    for (std::size_t d : o.d_k) experiments.push_back({d, std::vector<double>(o.samples), Matrix(o.queries, o.keys)});
    std::vector<Block> blocks;
    for (auto& e : experiments) {
        for (std::size_t first = 0, index = 0; first < o.samples; first += pairs_per_block, ++index)
            blocks.push_back({&e, true, first, std::min(pairs_per_block, o.samples - first), index});
        for (std::size_t first = 0, index = 0; first < o.queries; first += rows_per_block, ++index)
            blocks.push_back({&e, false, first, std::min(rows_per_block, o.queries - first), index});
    }
    // The largest blocks first, so no thread is left with a big one at the end.
    std::stable_sort(blocks.begin(), blocks.end(), [](const Block& a, const Block& b) { return a.experiment->d_k > b.experiment->d_k; });
    run_blocks(blocks, o, *make_backend("cpu"));
    std::vector<VarianceRow> rows;
    for (const auto& e : experiments) rows.push_back(summarise(e));
    return rows;
}

std::string variance_text(const std::vector<VarianceRow>& rows, const VarianceOptions& o) {
    std::string out = fmt::format("The √d_k experiment: q, k with N(0, 1) entries; {} pairs for the variance; {} queries × {} keys for softmax; seed {}\n\n",
                                  o.samples, o.queries, o.keys, o.seed);
    out += fmt::format("{:>6}  {:>10}  {:>10}  {:>17}  {:>19}  {:>17}\n", "d_k", "Var(q·k)", "Var(q·k/√d)", "largest weight", "rows above 0.99",
                       "gradient ‖J‖_F");
    out += fmt::format("{:>6}  {:>10}  {:>10}  {:>17}  {:>19}  {:>17}\n", "", "unscaled", "scaled", "unscaled  scaled", "unscaled  scaled", "unscaled  scaled");
    for (const auto& r : rows)
        out += fmt::format("{:>6}  {:>10.2f}  {:>10.3f}  {:>8.3f}  {:>7.3f}  {:>9.1f}%  {:>7.1f}%  {:>8.4f}  {:>7.4f}\n", r.d_k, r.variance_unscaled,
                           r.variance_scaled, r.largest_weight_unscaled, r.largest_weight_scaled, 100 * r.saturated_unscaled, 100 * r.saturated_scaled,
                           r.gradient_unscaled, r.gradient_scaled);
    out += "\nTheory: Var(q·k) = d_k, and dividing by √d_k brings it to 1 for every d_k. Unscaled, softmax saturates as d_k grows\n"
           "(one weight near 1) and its Jacobian diag(p) − p pᵀ, the gradient's path to the scores, shrinks towards 0.\n";
    return out;
}

std::string variance_json(const std::vector<VarianceRow>& rows, const VarianceOptions& o) {
    // The header every command's JSON starts with (docs/COMMANDS.md#variance).
    std::string out = fmt::format("{{\"attn_trace\": 1, \"command\": \"variance\", \"samples\": {}, \"queries\": {}, \"keys\": {}, \"seed\": {}, \"rows\": [", o.samples, o.queries, o.keys, o.seed);
    for (std::size_t k = 0; k < rows.size(); ++k) {
        const auto& r = rows[k];
        out += fmt::format("{}\n {{\"d_k\": {}, \"variance_unscaled\": {}, \"variance_scaled\": {}, \"largest_weight_unscaled\": {}, "
                           "\"largest_weight_scaled\": {}, \"saturated_unscaled\": {}, \"saturated_scaled\": {}, \"gradient_unscaled\": {}, "
                           "\"gradient_scaled\": {}}}",
                           k ? "," : "", r.d_k, r.variance_unscaled, r.variance_scaled, r.largest_weight_unscaled, r.largest_weight_scaled,
                           r.saturated_unscaled, r.saturated_scaled, r.gradient_unscaled, r.gradient_scaled);
    }
    return out + "]}\n";
}

}  // namespace attn_trace
