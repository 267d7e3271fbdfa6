#include "attn_trace/permutation.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attn_trace/compare.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/random.hpp"
#include "attn_trace/split_list.hpp"

namespace attn_trace {

namespace {

Matrix permute_rows(const Matrix& a, const std::vector<std::size_t>& perm) {
    Matrix out(a.rows(), a.cols());
    for (std::size_t i = 0; i < a.rows(); ++i) std::copy(a.row(perm[i]), a.row(perm[i]) + a.cols(), out.row(i));
    return out;
}

template <typename T>
void permute_list(std::vector<T>& items, const std::vector<std::size_t>& perm) {
    if (items.empty()) return;
    std::vector<T> out;
    for (std::size_t i : perm) out.push_back(items[i]);
    items = std::move(out);
}

// Direct Q, K, V with n ≠ m are queries reading a separate source, as X_source is.
bool has_source(const Problem& p) { return p.cross_attention() || (!p.from_tokens() && p.n != p.m); }

// The step that says what the layer gives out: final (with W_O), else concat (several heads).
bool is_layer_output(const Problem& p, const Step& step) { return step.name == (p.W_O ? StepName::final : StepName::concat); }

double max_abs_diff(const Matrix& a, const Matrix& b) {
    double most = 0;
    for (std::size_t i = 0; i < a.data().size(); ++i) most = std::max(most, value_difference(a.data()[i], b.data()[i]));
    return most;
}

}  // namespace

std::vector<std::size_t> parse_permutation(const std::string& text, std::size_t count) {
    std::vector<std::size_t> perm;
    if (!text.empty() && text.back() == ',')
        throw InputError(fmt::format("⟦perm⟧ {}: expected indices 0 … {} separated by commas, found a comma at the end", text, count - 1));
    for (const std::string& item : text.empty() ? std::vector<std::string>{} : split_list(text, ',')) {
        std::size_t used = 0;
        long value = -1;
        try {
            value = std::stol(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != item.size() || item.empty() || value < 0)
            throw InputError(fmt::format("⟦perm⟧ {}: expected indices 0 … {} separated by commas, found '{}'", text, count - 1, item));
        perm.push_back(static_cast<std::size_t>(value));
    }
    if (perm.size() != count)
        throw InputError(fmt::format("⟦perm⟧ {}: the experiment permutes {} rows, so it needs {} indices, found {}", text, count, count, perm.size()));
    std::vector<bool> seen(count, false);
    for (std::size_t i : perm) {
        if (i >= count) throw InputError(fmt::format("⟦perm⟧ {}: index {} is past the last row ({})", text, i, count - 1));
        if (seen[i]) throw InputError(fmt::format("⟦perm⟧ {}: index {} appears twice, so this is not a permutation", text, i));
        seen[i] = true;
    }
    return perm;
}

std::vector<std::size_t> random_permutation(std::size_t count, std::uint64_t seed) {
    std::vector<std::size_t> perm(count);
    for (std::size_t i = 0; i < count; ++i) perm[i] = i;
    PortableRandom generator(seed);
    for (std::size_t i = count; i > 1; --i) std::swap(perm[i - 1], perm[static_cast<std::size_t>(generator.uniform() * static_cast<double>(i))]);
    return perm;
}

std::size_t permuted_rows(const Problem& p, bool source) {
    if (source && !has_source(p))
        throw InputError(fmt::format("{}: ⟦source⟧ permutes the source rows of cross-attention, and this problem is self-attention (no X_source; "
                                     "Q, K, V of {} rows each): leave it out to permute the tokens",
                                     p.file, p.n));
    return source ? p.m : p.n;
}

Problem permuted_problem(const Problem& problem, const PermuteOptions& permute) {
    Problem p = problem;
    const auto& perm = permute.perm;
    if (permute.source) {
        for (auto& x : p.X_source) x = permute_rows(x, perm);
        if (!p.from_tokens()) {
            p.K = permute_rows(*p.K, perm);
            p.V = permute_rows(*p.V, perm);
        }
        permute_list(p.source_tokens, perm);
        permute_list(p.source_positions, perm);
        return p;
    }
    for (auto& x : p.X) x = permute_rows(x, perm);
    if (!p.from_tokens()) {
        p.Q = permute_rows(*p.Q, perm);
        if (!has_source(p)) {  // self-attention given as Q, K, V: each row is one token's
            p.K = permute_rows(*p.K, perm);
            p.V = permute_rows(*p.V, perm);
        }
    }
    permute_list(p.tokens, perm);
    permute_list(p.positions, perm);
    if (!has_source(p)) permute_list(p.source_positions, perm);
    return p;
}

std::vector<std::string> symmetry_breakers(const Problem& p, bool source) {
    std::vector<std::string> found;
    const auto add = [&](const std::string& what) {
        if (std::find(found.begin(), found.end(), what) == found.end()) found.push_back(what);
    };
    for (const auto& spec : p.masks)
        if (const std::string words = position_dependence(spec); !words.empty()) add(words);
    if (!p.lengths.empty()) add("lengths (padding past each sequence's length)");
    if (p.alibi_slopes) add("ALiBi (a bias on the distance between positions)");
    // RoPE turns each row by its position: positions that travel with the rows
    // keep every score, fixed default ones do not.
    const bool own_positions = source ? !p.source_positions.empty() : !p.positions.empty();
    const bool rope = p.rope || (p.mla && p.mla->d_r > 0);  // MLA turns its decoupled part
    if (rope && !own_positions) add("RoPE at the default positions (they stay in place while the rows move)");
    if (rope && !source && !has_source(p) && p.positions.empty() != p.source_positions.empty())
        add("RoPE with positions given for one side only");
    if (p.dropout && p.dropout->train) add("dropout in train mode (its keep belongs to positions)");
    return found;
}

Trace permutation_trace(const Problem& problem, const RunOptions& options, const PermuteOptions& permute) {
    const Trace original = pipeline_full(problem, options);
    const Trace shuffled = pipeline_full(permuted_problem(problem, permute), options);
    Trace trace;
    trace.command = "permute";
    trace.problem = original.problem;
    trace.notes = original.notes;
    const bool with_final = problem.heads > 1 || problem.W_O.has_value();
    double most = 0;
    const auto& perm = permute.perm;
    for (std::size_t s = 0; s < original.steps.size(); ++s) {
        const Step& step = original.steps[s];
        const bool head_out = step.name == StepName::out && step.head;
        if (!head_out && !(with_final && is_layer_output(problem, step))) continue;
        const StepName what = head_out ? StepName::out : step.name;  // out of a head, or the layer's final / concat
        const Step* other = shuffled.find(step.name, step.head, step.batch, std::nullopt, std::nullopt);
        Step of_x = step, of_permuted = *other;
        of_x.name = StepName::out;
        of_x.head = head_out ? step.head : std::nullopt;
        of_x.formula = fmt::format("{}(X), the problem as given", what);
        of_permuted.name = StepName::out_of_permuted;
        of_permuted.head = of_x.head;
        of_permuted.formula = permute.source ? fmt::format("{} with the source rows permuted", what) : fmt::format("{}(P·X), rows permuted first", what);
        trace.steps.push_back(of_x);
        trace.steps.push_back(of_permuted);
        if (permute.source) {
            most = std::max(most, max_abs_diff(of_permuted.values, step.values));
            continue;
        }
        Step moved = step;
        moved.name = StepName::permuted_out;
        moved.head = of_x.head;
        moved.formula = fmt::format("P·{}(X): its rows permuted after", what);
        moved.values = permute_rows(step.values, perm);
        permute_list(moved.row_labels, perm);
        most = std::max(most, max_abs_diff(of_permuted.values, moved.values));
        trace.steps.push_back(std::move(moved));
    }
    // Equal to rounding: a few ulps (2u each) of the largest output, the sums over keys running
    // in another order. In f64 and f32 that order moves a long sum by up to its length in
    // ulps: 64. A half type sums in f32 and rounds each step once
    // (docs/PROBLEM.md#dtype-half-precision), so another order moves a stored value by at
    // most 1 ulp of the type (at a near-tie), which the steps after it carry as a few: 4.
    double largest = 0;
    for (const auto& step : trace.steps)
        for (double x : step.values.data())
            if (std::isfinite(x)) largest = std::max(largest, std::fabs(x));
    const double units = is_half(options.dtype) ? 4 : 64;
    const double rounding = units * 2 * unit_roundoff(options.dtype) * std::max(largest, 1.0);
    const auto breakers = symmetry_breakers(problem, permute.source);
    trace.numbers.push_back({permute.source ? "max_abs_diff_invariance" : "max_abs_diff_equivariance", most});
    trace.notes.push_back({NoteKind::permutation,
                           {{"max_abs_diff", most}, {"rounding", rounding}, {"holds", most <= rounding ? 1.0 : 0.0}},
                           {{"perm", fmt::format("{}", fmt::join(perm, ","))},
                            {"side", permute.source ? "source" : "queries"},
                            {"breakers", fmt::format("{}", fmt::join(breakers, "; "))}}});
    return trace;
}

}  // namespace attn_trace
