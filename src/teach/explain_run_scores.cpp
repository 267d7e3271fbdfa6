// The score side's cells: S = q · k, scaled by s, capped, and the mask added (one chain for
// scores, scaled, capped and masked), and the mask's cell, rule by rule.
#include <cmath>

#include <fmt/format.h>

#include "attn_trace/attention_parts.hpp"
#include "attn_trace/render.hpp"
#include "explain_run_explainer.hpp"

namespace attn_trace {

// S_ij = q_i · k_j, then s · S_ij, (the soft cap), and the mask: the whole chain
// for any of its steps (scores, scaled, capped, masked), as the first explain did for scores.
ExplainDocument RunExplainer::score_cell() {
    const std::size_t i = i_, j = this->j();
    const int g = kv_head_of(p_, options_.head);
    const auto q = head_row(StepName::q, i, options_.head, p_.d_k), k = head_row(StepName::k, j, g, p_.d_k);
    ExplainDocument d;
    d.heading = fmt::format("{}[{},{}], {}: query {}{} · key {}{}", target_.step, i, j, where(), i, quoted_label(query_labels(p_), i), j,
                            quoted_label(key_labels(p_), j));
    const std::string rope = p_.rope ? " after RoPE" : p_.qk_norm ? " after qk-norm" : "";
    d.lines.push_back({fmt::format("the query: row {} of Q{}, head {}'s {} columns", i, rope, options_.head, p_.d_k), n_.sub("q", index(i)) + " = " + n_.vector(q)});
    d.lines.push_back({fmt::format("the key: row {} of K{}{}", j, rope, p_.kv_heads < p_.heads ? fmt::format(", KV head {} (read by query head {})", g, options_.head) : ""),
                       n_.sub("k", index(j)) + " = " + n_.vector(k)});
    const DotTerms dot = dot_terms(q, k);
    const double score = at(StepName::scores, i, j);
    d.lines.push_back({"the dot product: multiply the pairs and add",
                       n_.chain({n_.sub("S", index(i, j)), n_.sub("q", index(i)) + n_.dot() + n_.sub("k", index(j)), dot.products, dot.values, n_.number(score)})});
    const double s = p_.scale_factor(), scaled = at(StepName::scaled, i, j);
    const std::string scale_words = p_.scale.kind == Scale::Kind::automatic ? fmt::format("s = 1/√d_k = 1/√{}", p_.d_k) : "the problem's s";
    d.lines.push_back({fmt::format("the scale ({})", scale_words),
                       fmt::format("s{}{} = {}{}{} = {}", n_.dot(), n_.sub("S", index(i, j)), n_.number(s), n_.times(), n_.factor(score), n_.number(scaled))});
    double before_mask = scaled;
    if (p_.softcap) {
        before_mask = at(StepName::capped, i, j);
        d.lines.push_back({fmt::format("the soft cap c = {}", n_.number(*p_.softcap)),
                           fmt::format("c{}tanh({} / c) = {}", n_.dot(), n_.number(scaled), n_.number(before_mask))});
    }
    const double mask = at(StepName::mask, i, j), masked = at(StepName::masked, i, j);
    d.lines.push_back({mask == 0 ? "the mask lets query " + index(i) + " read key " + index(j) + " (M = 0)"
                                 : std::isinf(mask) ? "the mask hides key " + index(j) + " from query " + index(i) + " (M = -inf)"
                                                    : "the mask adds a bias",
                       fmt::format("{} = {} + {} = {}", n_.sub("z", index(i, j)), n_.number(before_mask), n_.factor(mask), n_.number(masked))});
    // The chain's step that is explained is its last rounding, from the stored step before it.
    close_with_rounding(d, [&] {
        if (target_.step == StepName::scores) return f32_dot(q, k);
        if (target_.step == StepName::scaled) return static_cast<float>(s) * stored(score);  // s is an f32 constant
        if (target_.step == StepName::capped) {
            const float c = static_cast<float>(*p_.softcap);
            return c * std::tanh(stored(scaled) / c);
        }
        return static_cast<float>(before_mask + mask);  // masked: the mask is 0, -inf or a bias
    });
    return finish(d);
}

// M_ij: every rule of the problem, one by one, and what it says about this cell.
ExplainDocument RunExplainer::mask_cell() {
    const std::size_t i = i_, j = this->j();
    const long offset = static_cast<long>(p_.m) - static_cast<long>(p_.n);
    ExplainDocument d;
    d.heading = heading(fmt::format("may query {} read key {}?", i, j));
    for (const MaskSpec& spec : p_.masks) {
        // The rule on its own, through the same code that built M.
        const double alone = build_mask_rows({spec}, p_.n, p_.m, p_.m, 0.0, i, 1)(0, j);
        d.lines.push_back({mask_rule(spec, i, j, alone), ""});
    }
    if (!p_.lengths.empty()) {
        const std::size_t length = p_.lengths[static_cast<std::size_t>(options_.batch)];
        d.lines.push_back({fmt::format("lengths: batch {} has {} real keys, so keys {} and later are padding: key {} is {}", options_.batch, length,
                                       length, j, j < length ? "real (0)" : "padding (-inf)"),
                           ""});
    }
    if (p_.alibi_slopes) {
        const double slope = (*p_.alibi_slopes)[static_cast<std::size_t>(options_.head)];
        const double distance = std::fabs(static_cast<double>(static_cast<long>(i) + offset - static_cast<long>(j)));
        d.lines.push_back({fmt::format("ALiBi: head {}'s slope times the distance between query position {} and key {}", options_.head,
                                       static_cast<long>(i) + offset, j),
                           fmt::format("-m{}|{} - {}| = -{}{}{} = {}", n_.dot(), static_cast<long>(i) + offset, j, n_.number(slope), n_.times(),
                                       n_.number(distance), n_.number(-slope * distance))});
    }
    if (p_.masks.empty() && p_.lengths.empty() && !p_.alibi_slopes) d.lines.push_back({"the problem has no mask: every query reads every key", ""});
    const double value = at(StepName::mask, i, j);
    d.lines.push_back({std::isinf(value) ? "a rule hides the key, so M is -inf (a hidden key wins over every bias)"
                                         : value == 0 ? "no rule hides the key and nothing biases it" : "no rule hides the key; the biases add up",
                       n_.sub("M", index(i, j)) + " = " + n_.number(value)});
    return finish(d);
}

std::string RunExplainer::mask_rule(const MaskSpec& spec, std::size_t i, std::size_t j, double alone) const {
    const std::string verdict = std::isinf(alone) ? "hidden (-inf)" : "visible (0)";
    switch (spec.kind) {
        case MaskSpec::Kind::none: return "none: every key is visible";
        case MaskSpec::Kind::causal_upper_left:
        case MaskSpec::Kind::causal_bottom_right:
        case MaskSpec::Kind::window:
        case MaskSpec::Kind::chunked: return fmt::format("{}, so key {} is {}", key_range_rule(spec, i, p_.n, p_.m), j, verdict);
        case MaskSpec::Kind::key_valid: return fmt::format("{}: key {} is marked {}, so it is {}", spec.label, j, spec.key_valid[j] ? 1 : 0, verdict);
        case MaskSpec::Kind::allowed:
        case MaskSpec::Kind::blocked:
            return fmt::format("the explicit {} matrix has {} at [{},{}], so the key is {}", spec.kind == MaskSpec::Kind::allowed ? "allowed" : "blocked",
                               spec.matrix(i, j), i, j, verdict);
        case MaskSpec::Kind::additive:
            return fmt::format("the explicit additive matrix adds {} at [{},{}]", format_rounded(alone, options_.precision), i, j);
        case MaskSpec::Kind::sparse:
            return fmt::format("{}: query {} is in block {}, key {} in block {}, so the key is {}", spec.label, i, i / spec.sparse.block, j,
                               j / spec.sparse.block, verdict);
    }
    return spec.label;
}

}  // namespace attn_trace
