// The softmax's cells: row_max, exp (the shifted score's exponential), row_sum, each weight
// and a whole row's softmax, the empty-row policy, and dropout's dropped weights.
#include <cmath>

#include <fmt/format.h>

#include "attn_trace/attention_parts.hpp"
#include "explain_run_explainer.hpp"

namespace attn_trace {

std::string RunExplainer::z_row_terms(std::size_t i, std::size_t per_line) const {
    return n_.terms(elided(p_.m, [&](std::size_t l) { return n_.number(at(StepName::masked, i, l)); }), ", ", per_line);
}

std::string RunExplainer::exp_sum(std::size_t i) const {
    return fmt::format("{} = {} = {}", n_.total(index(i)), n_.terms(elided(p_.m, [&](std::size_t l) { return n_.number(at(StepName::exp, i, l)); }), " + ", 8),
                       n_.number(at(StepName::row_sum, i, 0)));
}

// row_max_i = max_j z_ij
ExplainDocument RunExplainer::row_max_cell() {
    ExplainDocument d;
    d.heading = heading(fmt::format("the largest masked score of row {}", i_));
    const double max = at(StepName::row_max, i_, 0);
    std::size_t where_max = 0;
    while (where_max + 1 < p_.m && at(StepName::masked, i_, where_max) != max) ++where_max;
    d.lines.push_back({fmt::format("the masked row {} (scaled scores + mask)", i_), n_.sub("z", index(i_)) + " = (" + z_row_terms(i_, 8) + ")"});
    d.lines.push_back({std::isinf(max) ? "every key is masked: the max is -inf (an empty row)" : fmt::format("its largest value, at key {}", where_max),
                       n_.max_of(index(i_)) + " = " + n_.number(max)});
    return finish(d);
}

// exp_ij = e^(z_ij − max_i)
ExplainDocument RunExplainer::exp_cell() {
    const double z = at(StepName::masked, i_, j()), max = at(StepName::row_max, i_, 0);
    ExplainDocument d;
    d.heading = heading("the exponential of the shifted score");
    d.lines.push_back({"the masked score minus the row's max (so no exponential can overflow)",
                       fmt::format("{} = {} - {} = {}", n_.sub("z", index(i_, j())) + " - " + n_.max_of(index(i_)), n_.number(z), n_.factor(max), n_.number(z - max))});
    d.lines.push_back({std::isinf(z) ? "a masked key: e^(-inf) = 0" : "its exponential",
                       fmt::format("{} = {}", n_.exp(n_.number(z - max)), n_.number(at(StepName::exp, i_, j())))});
    // z − max is formed in f32 and not stored; a masked key's 0 and an empty row are not rounded.
    if (!std::isinf(z) && !std::isinf(max)) close_with_rounding(d, [&] { return std::exp(stored(z) - stored(max)); });
    return finish(d);
}

// row_sum_i = Σ_j exp_ij
ExplainDocument RunExplainer::row_sum_cell() {
    ExplainDocument d;
    d.heading = heading(fmt::format("the sum of row {}'s exponentials", i_));
    d.lines.push_back({"add the exponentials e^(z - max) of the row (masked keys give 0)", exp_sum(i_)});
    return finish(d);
}

// The row's empty-row policy, when no key is visible.
ExplainDocument RunExplainer::empty_row(ExplainDocument d, std::size_t i) const {
    d.lines.push_back({fmt::format("row {} can read no key: every z is -inf, so the softmax would be 0/0; the policy empty_rows = {} makes "
                                   "every weight {}", i, empty_rows_name(p_.empty_rows), p_.empty_rows == EmptyRows::nan ? "NaN" : "0"),
                       ""});
    return d;
}

// A_ij = e^(z_ij − max) / Σ_l e^(z_il − max)
ExplainDocument RunExplainer::weight_cell() {
    const std::size_t i = i_, j = this->j();
    ExplainDocument d;
    d.heading = fmt::format("weights[{},{}], {}: how much query {}{} reads key {}{}", i, j, where(), i, quoted_label(query_labels(p_), i), j,
                            quoted_label(key_labels(p_), j));
    const double z = at(StepName::masked, i, j), max = at(StepName::row_max, i, 0);
    if (std::isinf(max) && max < 0) return empty_row(std::move(d), i);
    const std::string A = n_.sub("A", index(i, j));
    if (std::isinf(z) && z < 0) {
        d.lines.push_back({fmt::format("key {} is masked for query {}: its score is -inf, and e^(-inf) = 0, so the weight is exactly 0", j, i),
                           fmt::format("{} = {} / {} = 0", A, n_.exp(n_.number(z)), n_.total(index(i)))});
        return finish(d);
    }
    d.lines.push_back({fmt::format("the masked score and the largest score of row {}", i),
                       fmt::format("{} = {},  {} = {}", n_.sub("z", index(i, j)), n_.number(z), n_.max_of(index(i)), n_.number(max))});
    const double sum = at(StepName::row_sum, i, 0);
    d.lines.push_back({"the sum of the row's exponentials e^(z - max) (masked keys give 0)", exp_sum(i)});
    d.lines.push_back({"the weight: this key's exponential over the sum",
                       softmax_quotient(A, n_.sub("z", index(i, j)), n_.max_of(index(i)), n_.total(index(i)), z, max, at(StepName::exp, i, j), sum, at(StepName::weights, i, j))});
    // The stored exp over row_sum, which stays f32.
    close_with_rounding(d, [&] { return stored(at(StepName::exp, i, j)) / static_cast<float>(sum); });
    return finish(d);
}

// The whole softmax of row i: the masked row, its max, the shifted values,
// each exponential, the sum, each quotient.
ExplainDocument RunExplainer::weight_row() {
    const std::size_t i = i_;
    ExplainDocument d;
    d.heading = fmt::format("weights[{}], {}: the softmax of row {}{}", i, where(), i, quoted_label(query_labels(p_), i));
    d.lines.push_back({"the masked row (scaled scores + mask; -inf = a key this query may not read)", n_.sub("z", index(i)) + " = (" + z_row_terms(i, 8) + ")"});
    const double max = at(StepName::row_max, i, 0);
    if (std::isinf(max) && max < 0) return empty_row(std::move(d), i);
    const std::string max_name = n_.max_of(index(i));
    d.lines.push_back({"its largest value", max_name + " = " + n_.number(max)});
    const double sum = at(StepName::row_sum, i, 0);
    const auto shifts = elided(p_.m, [&](std::size_t j) { return fmt::format("{} - {}", n_.number(at(StepName::masked, i, j)), n_.factor(max)); });
    const auto shifted = elided(p_.m, [&](std::size_t j) { return n_.number(at(StepName::masked, i, j) - max); });
    const auto exps = elided(p_.m, [&](std::size_t j) { return fmt::format("{} = {}", n_.exp(n_.number(at(StepName::masked, i, j) - max)), n_.number(at(StepName::exp, i, j))); });
    const auto quotients = elided(p_.m, [&](std::size_t j) {
        return fmt::format("{} = {} = {}", n_.sub("A", index(i, j)), n_.fraction(n_.number(at(StepName::exp, i, j)), n_.number(sum)), n_.number(at(StepName::weights, i, j)));
    });
    d.lines.push_back({"subtract it from every value (the weights do not change, and no exponential can overflow)",
                       n_.chain({n_.sub("z", index(i)) + " - " + max_name, "(" + n_.terms(shifts, ", ", 4) + ")", "(" + n_.terms(shifted, ", ", 8) + ")"})});
    d.lines.push_back({"each exponential (e^(-inf) = 0: a masked key gets nothing)", n_.terms(exps, ",  ", 3)});
    d.lines.push_back({"their sum", exp_sum(i)});
    d.lines.push_back({"each weight: its exponential over the sum", n_.terms(quotients, ",  ", 3)});
    double weight_total = 0;
    for (std::size_t j = 0; j < p_.m; ++j) weight_total += at(StepName::weights, i, j);
    d.lines.push_back({"the weights of the row add up to 1", fmt::format("{} {} = {}", n_.sum_symbol(), n_.sub("A", index(i) + "j"), n_.number(weight_total))});
    return finish(d);
}

// dropped_ij = a_ij · keep_ij / (1 − p)
ExplainDocument RunExplainer::dropped_cell() {
    const double a = at(StepName::weights, i_, j()), keep = at(StepName::keep, i_, j()), p = p_.dropout->p;
    ExplainDocument d;
    d.heading = heading("the weight after dropout");
    d.lines.push_back({keep == 0 ? "this weight is dropped (keep = 0)" : "this weight is kept (keep = 1) and scaled up by 1 / (1 − p)",
                       n_.chain({n_.sub("A'", index(i_, j())), n_.number(a) + n_.times() + n_.number(keep) + " / " + n_.number(1 - p),
                                 n_.number(at(StepName::dropped, i_, j()))})});
    close_with_rounding(d, [&] { return static_cast<float>(1 / (1 - p)) * stored(a * keep); });  // 1/(1 − p) is an f32 constant
    return finish(d);
}

}  // namespace attn_trace
