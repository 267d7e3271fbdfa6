// The outputs' cells: out as the weights' sum of the value rows (one component, or the whole
// row term by term), concat as the heads side by side, final as concat times W_O plus b_O.
#include <string>

#include <fmt/format.h>

#include "attn_trace/attention_parts.hpp"
#include "explain_run_explainer.hpp"

namespace attn_trace {

// o_ic = Σ_j A_ij v_jc, every term.
ExplainDocument RunExplainer::output_cell() {
    const std::size_t i = i_, c = j();
    const int g = kv_head_of(p_, options_.head);
    ExplainDocument d;
    d.heading = heading(fmt::format("component {} of query {}'s output, a weighted sum of the values", c, i));
    const StepName a = mixer();
    const auto products = elided(p_.m, [&](std::size_t l) { return n_.number(at(a, i, l)) + n_.times() + n_.factor(head_row(StepName::v, l, g, p_.d_v)[c]); });
    const auto terms = elided(p_.m, [&](std::size_t l) { return n_.factor(at(a, i, l) * head_row(StepName::v, l, g, p_.d_v)[c]); });
    d.lines.push_back({fmt::format("each key's weight times component {} of its value row{}", c, p_.kv_heads < p_.heads ? fmt::format(" (KV head {})", g) : ""),
                       n_.chain({n_.sub("o", index(i, c)), n_.sub(n_.sum_symbol(), "j") + " " + n_.sub("A", index(i) + "j") + " " + n_.sub("v", "j" + index(c)),
                                 n_.terms(products, " + ", 3), n_.terms(terms, " + ", 6), n_.number(at(StepName::out, i, c))})});
    close_with_rounding(d, [&] {
        std::vector<double> values(p_.m);  // component c of every value row
        for (std::size_t l = 0; l < p_.m; ++l) values[l] = head_row(StepName::v, l, g, p_.d_v)[c];
        return f32_dot(row_of(a, i, 0, p_.m), values);
    });
    return finish(d);
}

// o_i = Σ_j A_ij v_j, every term.
ExplainDocument RunExplainer::output_row() {
    const std::size_t i = i_;
    const int g = kv_head_of(p_, options_.head);
    ExplainDocument d;
    d.heading = fmt::format("out[{}], {}: the output of query {}{}, a weighted sum of the value rows", i, where(), i, quoted_label(query_labels(p_), i));
    std::vector<double> weights(p_.m);
    for (std::size_t j = 0; j < p_.m; ++j) weights[j] = at(mixer(), i, j);
    d.lines.push_back({fmt::format("the weights of row {} ({})", i, mixer() == StepName::dropped ? "after dropout" : "from the softmax"),
                       n_.sub("A", index(i)) + " = (" + n_.terms(elided(p_.m, [&](std::size_t j) { return n_.number(weights[j]); }), ", ", 8) + ")"});
    const auto shown = elided(p_.m, [](std::size_t j) { return std::to_string(j); });
    for (const auto& key : shown) {
        if (key == n_.ellipsis()) {
            d.lines.push_back({fmt::format("… and so on for keys 12 to {}", p_.m - 5), ""});
            continue;
        }
        const std::size_t j = std::stoul(key);
        const auto v = head_row(StepName::v, j, g, p_.d_v);
        std::vector<double> term(p_.d_v);
        for (std::size_t c = 0; c < p_.d_v; ++c) term[c] = weights[j] * v[c];
        d.lines.push_back({fmt::format("key {}{}: weight times value row {}{}", j, quoted_label(key_labels(p_), j), j,
                                       weights[j] == 0 ? " (weight 0: this key adds nothing)" : ""),
                           p_.d_v > 2 ? n_.terms({n_.sub("A", index(i, j)) + " " + n_.sub("v", index(j)) + " = " + n_.number(weights[j]) + n_.times() + n_.vector(v), n_.vector(term)}, " = ", 1)
                                      : n_.chain({n_.sub("A", index(i, j)) + " " + n_.sub("v", index(j)), n_.number(weights[j]) + n_.times() + n_.vector(v), n_.vector(term)})});
    }
    std::vector<std::string> components;
    for (std::size_t c = 0; c < p_.d_v; ++c)
        components.push_back(n_.terms(elided(p_.m, [&](std::size_t j) { return n_.factor(weights[j] * head_row(StepName::v, j, g, p_.d_v)[c]); }), " + ", 6));
    d.lines.push_back({"add the terms, component by component",
                       n_.chain({n_.sub("o", index(i)), n_.sub(n_.sum_symbol(), "j") + " " + n_.sub("A", index(i) + "j") + " " + n_.sub("v", "j"),
                                 "(" + n_.terms(components, ", ", 1) + ")", n_.vector(row_of(StepName::out, i, 0, p_.d_v))})});
    return finish(d);
}

// concat[i, c] = out of head c / d_v, column c mod d_v.
ExplainDocument RunExplainer::concat_cell() {
    const std::size_t c = j(), h = c / p_.d_v, column = c % p_.d_v;
    ExplainDocument d;
    d.heading = heading(fmt::format("column {} of [O_0 … O_{}] is head {}'s output column {}", c, p_.heads - 1, h, column));
    d.lines.push_back({fmt::format("the heads' outputs side by side, {} columns each: {} = {} · {} + {}", p_.d_v, c, h, p_.d_v, column),
                       fmt::format("{} = {} = {}", n_.sub("concat", index(i_, c)), n_.sub("O", n_.latex() ? "{" + std::to_string(h) + "," + index(i_, column) + "}" : std::to_string(h) + "[" + index(i_) + "," + std::to_string(column) + "]"),
                                   n_.number(at(StepName::out, i_, column, static_cast<int>(h))))});
    return finish(d);
}

// final[i, c] = concat_i · W_O[:, c] + b_O[c]
ExplainDocument RunExplainer::final_cell() {
    const std::size_t c = j();
    const auto concat = row_of(StepName::concat, i_, 0, static_cast<std::size_t>(p_.heads) * p_.d_v);
    ExplainDocument d;
    d.heading = heading("the output projection: the concatenated row times a column of W_O");
    const auto column = column_values(*p_.W_O, c);
    d.lines.push_back({fmt::format("row {} of concat", i_), n_.sub("concat", index(i_)) + " = " + n_.vector(concat)});
    d.lines.push_back({fmt::format("column {} of W_O", c), column_of("W_O", c) + " = " + n_.vector(column)});
    const std::optional<double> bias = p_.b_O ? std::optional<double>((*p_.b_O)[c]) : std::nullopt;
    d.lines.push_back(product_line(concat, column, "b_O", bias));
    close_with_rounding(d, [&] { return f32_dot(concat, column, bias); });
    return finish(d);
}

}  // namespace attn_trace
