// Pitfalls: wrong = the right trace's scores/mask/V with one mistake; right = the trace.
#include "attn_trace/pitfalls.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "attn_trace/attention_parts.hpp"
#include "attn_trace/render_table.hpp"
#include "attn_trace/backend.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/nearest_word.hpp"

namespace attn_trace {

namespace {

constexpr double minus_infinity = -std::numeric_limits<double>::infinity();

struct PitfallRule {
    std::string name, formula, mistake, explanation;  // formula: the wrong weights' short header
    bool needs_mask;
};

const std::vector<PitfallRule>& rules() {
    static const std::vector<PitfallRule> all = {
        {"mask-after-softmax", "softmax(S_s), blocked → 0", "softmax(scaled), then the blocked weights set to 0",
         "zeroing weights after softmax: the hidden keys' share is thrown away, so the rows no longer sum to 1 (add -inf before softmax)", true},
        {"zero-scores", "softmax(S_s, blocked scores → 0)", "softmax(scaled with the blocked scores set to 0)",
         "a blocked score of 0 still counts: e^0 = 1 takes weight from the visible keys (blocked scores must be -inf)", true},
        {"column-softmax", "softmax over the queries", "softmax(masked) over the queries (each column sums to 1)",
         "normalising over queries instead of keys: each key's column sums to 1, and a query's weights no longer do", false},
        {"no-scale", "softmax(S + M)", "softmax(Q Kᵀ + M), without 1/√d_k",
         "without 1/√d_k the scores' spread grows as √d_k and softmax saturates towards one key (its gradient vanishes)", false},
        {"bool-polarity", "softmax(S_s + inverted M)", "the mask read with the opposite meaning (true = blocked taken as true = may read)",
         "a blocked-convention mask (nn.MultiheadAttention) read as allowed (scaled_dot_product_attention): each query reads exactly "
         "the keys it must not; a row with nothing visible comes back as zeros",
         true},
    };
    return all;
}

const PitfallRule& rule_named(const std::string& name) {
    for (const auto& rule : rules())
        if (rule.name == name) return rule;
    throw InputError(fmt::format("⟦pitfall⟧ '{}'{}: expected one of {}", name, did_you_mean(name, pitfall_names()), fmt::join(pitfall_names(), ", ")));
}

bool blocked(double mask_value) { return std::isinf(mask_value) && mask_value < 0; }

Matrix map_cells(const Matrix& a, const Matrix& mask, double (*f)(double value, double mask_value)) {
    Matrix out(a.rows(), a.cols());
    for (std::size_t i = 0; i < a.data().size(); ++i) out.data()[i] = f(a.data()[i], mask.data()[i]);
    return out;
}

// (n, m) scores before the mask (scaled, or capped), mask, masked, scores → wrong weights (n, m).
Matrix wrong_weights(const std::string& name, const Trace& trace, const Step& weights, Dtype dtype) {
    auto step = [&](StepName s) -> const Matrix& { return trace.find(s, weights.head, weights.batch, std::nullopt, std::nullopt)->values; };
    const Matrix& mask = step(StepName::mask);
    const Matrix& before_mask = trace.find(StepName::capped, weights.head, weights.batch, std::nullopt, std::nullopt) ? step(StepName::capped) : step(StepName::scaled);
    // Wrong computations may leave a row (or column) with nothing visible: PyTorch ≥ 2.5 gives zeros there.
    auto softmax = [dtype](const Matrix& z) { return softmax_rows(z, EmptyRows::zero, dtype).weights; };
    if (name == "mask-after-softmax")
        return map_cells(softmax(before_mask), mask, [](double w, double m) { return blocked(m) ? 0.0 : w; });
    if (name == "zero-scores")
        return softmax(map_cells(before_mask, mask, [](double z, double m) { return blocked(m) ? 0.0 : z + m; }));
    if (name == "column-softmax") return softmax(step(StepName::masked).transposed()).transposed();
    if (name == "no-scale") return softmax(add_elementwise(step(StepName::scores), mask, dtype));
    // bool-polarity: every visible key becomes blocked and every blocked key visible.
    return softmax(map_cells(before_mask, mask, [](double z, double m) { return blocked(m) ? z : minus_infinity; }));
}

Step labelled(const Step& like, StepName name, std::string formula, Matrix values) {
    Step s = like;
    s.name = name;
    s.formula = std::move(formula);
    s.values = std::move(values);
    // The mistake is not measured against f64: the right step's error and marks are not its own.
    s.max_abs_error_vs_f64.reset();
    s.lost_cells.clear();
    s.overflowed_cells = s.underflowed_cells = 0;
    return s;
}

std::string row_sums(const Matrix& w, int precision) {
    std::vector<std::string> sums;
    for (std::size_t i = 0; i < w.rows(); ++i) {
        double sum = 0;
        for (std::size_t j = 0; j < w.cols(); ++j) sum += w(i, j);
        sums.push_back(format_rounded(sum, precision));
    }
    return fmt::format("row sums: {}", fmt::join(sums, ", "));
}

// Two blocks of lines next to each other.
std::string side_by_side(const std::string& left, const std::string& right) {
    auto lines = [](const std::string& text) {
        std::vector<std::string> out;
        for (std::size_t start = 0; start < text.size();) {
            const auto end = text.find('\n', start);
            out.push_back(text.substr(start, end - start));
            start = end == std::string::npos ? text.size() : end + 1;
        }
        return out;
    };
    const auto a = lines(left), b = lines(right);
    std::size_t width = 0;
    for (const auto& line : a) width = std::max(width, display_width(line));
    std::string out;
    for (std::size_t k = 0; k < std::max(a.size(), b.size()); ++k)
        out += pad_right(k < a.size() ? a[k] : "", width) + "   │   " + (k < b.size() ? b[k] : "") + "\n";
    return out;
}

}  // namespace

const std::vector<std::string>& pitfall_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const auto& rule : rules()) out.push_back(rule.name);
        return out;
    }();
    return names;
}

Pitfall compute_pitfall(const std::string& name, const Problem& problem, const Trace& right, const RunOptions& options) {
    const PitfallRule& rule = rule_named(name);
    const auto backend = make_backend(options.backend);
    Pitfall pitfall{rule.name, rule.mistake, rule.explanation, {}};
    bool anything_masked = false;
    for (const auto& weights : right.steps) {
        if (weights.name != StepName::weights || !weights.head) continue;
        auto step = [&](StepName s) -> const Step& { return *right.find(s, weights.head, weights.batch, std::nullopt, std::nullopt); };
        const Matrix& mask = step(StepName::mask).values;
        anything_masked = anything_masked || std::any_of(mask.data().begin(), mask.data().end(), blocked);
        // V of the KV head this query head reads.
        const Step* v_all = right.find(StepName::v, std::nullopt, weights.batch, std::nullopt, std::nullopt);
        const Matrix v = v_all->values.columns(static_cast<std::size_t>(kv_head_of(problem, *weights.head)) * problem.d_v, problem.d_v);
        Matrix wrong = wrong_weights(name, right, weights, options.dtype);
        Matrix wrong_out = backend->multiply(wrong, v, options.dtype);
        // "(right)" and "(wrong)" after the formula: the heading puts the step's symbol first (docs/NOTATION.md#headings).
        pitfall.heads.push_back({labelled(weights, StepName::weights, weights.formula + " (right)", weights.values),
                                 labelled(weights, StepName::weights, rule.formula + " (wrong)", std::move(wrong)),
                                 labelled(step(StepName::out), StepName::out, step(StepName::out).formula + " (right)", step(StepName::out).values),
                                 labelled(step(StepName::out), StepName::out, "A V with the wrong A (wrong)", std::move(wrong_out))});
    }
    if (rule.needs_mask && !anything_masked)
        throw InputError(fmt::format("⟦pitfall⟧ {}: no key is masked in this problem, so the mistake would change nothing: add a mask, "
                                     "e.g. ⟦mask⟧ causal", name));
    return pitfall;
}

std::string render_pitfall(const Pitfall& pitfall, const RenderOptions& options) {
    std::string out = fmt::format("pitfall {}: {}\nwhy it is wrong: {}\n", pitfall.name, pitfall.mistake, pitfall.explanation);
    for (const auto& head : pitfall.heads) {
        if (options.head && head.right_weights.head && *options.head != *head.right_weights.head) continue;
        if (options.batch && head.right_weights.batch && *options.batch != *head.right_weights.batch) continue;
        out += "\n" + side_by_side(render_step_text(head.right_weights, options) + row_sums(head.right_weights.values, options.precision),
                                   render_step_text(head.wrong_weights, options) + row_sums(head.wrong_weights.values, options.precision));
        out += "\n" + side_by_side(render_step_text(head.right_out, options), render_step_text(head.wrong_out, options));
    }
    return out;
}

}  // namespace attn_trace
