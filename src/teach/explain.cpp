// explain: every number below is read from the trace the pipeline computed (q, k,
// scaled, mask, masked, row_max, exp, row_sum, weights, v, out), or is one product
// of two such numbers, so the explanation cannot drift from the computation.
#include "attn_trace/explain.hpp"

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "../pipeline/attention_parts.hpp"
#include "attn_trace/errors.hpp"
#include "explain_document.hpp"

namespace attn_trace {

namespace {

const std::vector<std::string> cell_steps = {"scores", "weights"};
const std::vector<std::string> row_steps = {"weights", "out"};

ExplainTarget parse_spec(const std::string& text, bool row) {
    const std::string option = row ? "--row" : "--cell";
    static const std::regex cell_pattern(R"(\s*([A-Za-z_]+)\s*\[\s*(\d+)\s*,\s*(\d+)\s*\]\s*)");
    static const std::regex row_pattern(R"(\s*([A-Za-z_]+)\s*\[\s*(\d+)\s*\]\s*)");
    std::smatch match;
    if (!std::regex_match(text, match, row ? row_pattern : cell_pattern)) {
        const bool other_form = std::regex_match(text, match, row ? cell_pattern : row_pattern);
        throw InputError(fmt::format("{} '{}': expected {} with 0-based indices, e.g. {}{}", option, text, row ? "STEP[i]" : "STEP[i,j]",
                                     row ? "weights[1]" : "scores[0,2]",
                                     other_form ? fmt::format(" (for {} use {})", row ? "one cell" : "a whole row", row ? "--cell" : "--row") : ""));
    }
    const auto& allowed = row ? row_steps : cell_steps;
    ExplainTarget target;
    target.step = match[1];
    target.spec = text;
    if (std::find(allowed.begin(), allowed.end(), target.step) == allowed.end())
        throw InputError(fmt::format("{} '{}': cannot explain step '{}' this way: {} explains {} (cells: scores[i,j], weights[i,j]; "
                                     "rows: weights[i], out[i])",
                                     option, text, target.step, option, fmt::join(allowed, " and ")));
    try {
        target.row = std::stoul(match[2]);
        if (!row) target.column = std::stoul(match[3]);
    } catch (const std::out_of_range&) {
        throw InputError(fmt::format("{} '{}': the index is too large", option, text));
    }
    return target;
}

std::string quoted_label(const std::vector<std::string>& labels, std::size_t i) {
    return i < labels.size() ? fmt::format(" (\"{}\")", labels[i]) : "";
}

class Explainer {
public:
    Explainer(const Trace& trace, const Problem& problem, const ExplainTarget& target, const ExplainOptions& options)
        : trace_(trace), p_(problem), target_(target), options_(options), n_(options.format != "text", options.precision) {}

    ExplainDocument explain() {
        check_ranges();
        if (target_.step == "scores") return score_cell();
        if (target_.step == "out") return output_row();
        return target_.column ? weight_cell() : weight_row();
    }

private:
    const Step& step(const std::string& name, bool per_head) const {
        const Step* s = trace_.find(name, per_head ? std::optional<int>(options_.head) : std::nullopt,
                                    p_.batched ? std::optional<int>(options_.batch) : std::nullopt, std::nullopt, std::nullopt);
        if (!s) throw InputError(fmt::format("explain: the trace has no '{}' step", name));
        return *s;
    }
    double at(const std::string& name, std::size_t i, std::size_t j) const { return step(name, true).values(i, j); }

    void check_ranges() const {
        const std::string& spec = target_.spec;
        if (options_.head < 0 || options_.head >= p_.heads)
            throw InputError(fmt::format("--head {}: the problem has {} head{} (0 to {})", options_.head, p_.heads, p_.heads == 1 ? "" : "s", p_.heads - 1));
        if (options_.batch < 0 || static_cast<std::size_t>(options_.batch) >= p_.batch)
            throw InputError(fmt::format("--batch {}: the problem has {} sequence{} (0 to {})", options_.batch, p_.batch, p_.batch == 1 ? "" : "s", p_.batch - 1));
        if (target_.row >= p_.n)
            throw InputError(fmt::format("'{}': row {} is out of range: the problem has {} quer{} (rows 0 to {}; indices are 0-based)", spec,
                                         target_.row, p_.n, p_.n == 1 ? "y" : "ies", p_.n - 1));
        if (target_.column && *target_.column >= p_.m)
            throw InputError(fmt::format("'{}': column {} is out of range: the problem has {} key{} (columns 0 to {}; indices are 0-based)", spec,
                                         *target_.column, p_.m, p_.m == 1 ? "" : "s", p_.m - 1));
    }

    std::string where() const {
        std::string out = fmt::format("head {}", options_.head);
        if (p_.batched) out += fmt::format(", batch {}", options_.batch);
        return out;
    }
    std::string index(std::size_t i) const { return std::to_string(i); }
    // "02" for A_02; "1,10" once an index has two digits, so it stays readable.
    std::string index(std::size_t i, std::size_t j) const { return i >= 10 || j >= 10 ? fmt::format("{},{}", i, j) : fmt::format("{}{}", i, j); }
    std::string footnote() const {
        return fmt::format("every number rounded to {} decimals; each result is the computed value, so a last digit may differ from the rounded terms",
                           options_.precision);
    }

    // Row i of the head's slice of a side-by-side step (q, k, v), or of its RoPE step.
    std::vector<double> head_row(const std::string& name, std::size_t i, int column_head, std::size_t width) const {
        const bool rotated = p_.rope && (name == "q" || name == "k");
        const Step& s = rotated ? step(name + "_rot", true) : step(name, false);
        const std::size_t first = rotated ? 0 : static_cast<std::size_t>(column_head) * width;
        return {s.values.row(i) + first, s.values.row(i) + first + width};
    }

    // S_ij = q_i · k_j, then s · S_ij, (the soft cap), and the mask.
    ExplainDocument score_cell() {
        const std::size_t i = target_.row, j = *target_.column;
        const int g = kv_head_of(p_, options_.head);
        const auto q = head_row("q", i, options_.head, p_.d_k), k = head_row("k", j, g, p_.d_k);
        ExplainDocument d;
        d.heading = fmt::format("scores[{},{}], {}: query {}{} · key {}{}", i, j, where(), i, quoted_label(query_labels(p_), i), j,
                                quoted_label(key_labels(p_), j));
        const std::string rope = p_.rope ? " after RoPE" : "";
        d.lines.push_back({fmt::format("the query: row {} of Q{}, head {}'s {} columns", i, rope, options_.head, p_.d_k), n_.sub("q", index(i)) + " = " + n_.vector(q)});
        d.lines.push_back({fmt::format("the key: row {} of K{}{}", j, rope, p_.kv_heads < p_.heads ? fmt::format(", KV head {} (read by query head {})", g, options_.head) : ""),
                           n_.sub("k", index(j)) + " = " + n_.vector(k)});
        std::vector<std::string> products, terms;
        for (std::size_t t = 0; t < q.size(); ++t) {
            products.push_back(n_.factor(q[t]) + n_.times() + n_.factor(k[t]));
            terms.push_back(n_.factor(q[t] * k[t]));
        }
        const double score = at("scores", i, j);
        d.lines.push_back({"the dot product: multiply the pairs and add",
                           fmt::format("{} = {}{}{} = {} = {} = {}", n_.sub("S", index(i, j)), n_.sub("q", index(i)), n_.dot(), n_.sub("k", index(j)),
                                       fmt::join(products, " + "), fmt::join(terms, " + "), n_.number(score))});
        const double s = p_.scale_factor(), scaled = at("scaled", i, j);
        const std::string scale_words = p_.scale.kind == Scale::Kind::automatic ? fmt::format("s = 1/√d_k = 1/√{}", p_.d_k) : "the problem's s";
        d.lines.push_back({fmt::format("the scale ({})", scale_words),
                           fmt::format("s{}{} = {}{}{} = {}", n_.dot(), n_.sub("S", index(i, j)), n_.number(s), n_.times(), n_.factor(score), n_.number(scaled))});
        double before_mask = scaled;
        if (p_.softcap) {
            before_mask = at("capped", i, j);
            d.lines.push_back({fmt::format("the soft cap c = {}", n_.number(*p_.softcap)),
                               fmt::format("c{}tanh({} / c) = {}", n_.dot(), n_.number(scaled), n_.number(before_mask))});
        }
        const double mask = at("mask", i, j), masked = at("masked", i, j);
        d.lines.push_back({mask == 0 ? "the mask lets query " + index(i) + " read key " + index(j) + " (M = 0)"
                                     : std::isinf(mask) ? "the mask hides key " + index(j) + " from query " + index(i) + " (M = -inf)"
                                                        : "the mask adds a bias",
                           fmt::format("{} = {} + {} = {}", n_.sub("z", index(i, j)), n_.number(before_mask), n_.factor(mask), n_.number(masked))});
        d.footnote = footnote();
        return d;
    }

    // The row's empty-row policy, when no key is visible.
    ExplainDocument empty_row(ExplainDocument d, std::size_t i) const {
        d.lines.push_back({fmt::format("row {} can read no key: every z is -inf, so the softmax would be 0/0; the policy empty_rows = {} makes "
                                       "every weight {}", i, empty_rows_name(p_.empty_rows), p_.empty_rows == EmptyRows::nan ? "NaN" : "0"),
                           ""});
        return d;
    }

    // A_ij = e^(z_ij − max) / Σ_l e^(z_il − max)
    ExplainDocument weight_cell() {
        const std::size_t i = target_.row, j = *target_.column;
        ExplainDocument d;
        d.heading = fmt::format("weights[{},{}], {}: how much query {}{} reads key {}{}", i, j, where(), i, quoted_label(query_labels(p_), i), j,
                                quoted_label(key_labels(p_), j));
        const double z = at("masked", i, j), max = at("row_max", i, 0), weight = at("weights", i, j);
        if (std::isinf(max) && max < 0) return empty_row(std::move(d), i);
        const std::string A = n_.sub("A", index(i, j));
        if (std::isinf(z) && z < 0) {
            d.lines.push_back({fmt::format("key {} is masked for query {}: its score is -inf, and e^(-inf) = 0, so the weight is exactly 0", j, i),
                               fmt::format("{} = {} / {} = 0", A, n_.exp(n_.number(z)), n_.total(index(i)))});
            d.footnote = footnote();
            return d;
        }
        std::vector<std::string> exps;
        for (std::size_t l = 0; l < p_.m; ++l) exps.push_back(n_.number(at("exp", i, l)));
        d.lines.push_back({fmt::format("the masked score and the largest score of row {}", i),
                           fmt::format("{} = {},  {} = {}", n_.sub("z", index(i, j)), n_.number(z), n_.max_of(index(i)),
                                       n_.number(max))});
        d.lines.push_back({fmt::format("the sum of the row's exponentials e^(z - max) (masked keys give 0)"),
                           fmt::format("{} = {} = {}", n_.total(index(i)), fmt::join(exps, " + "), n_.number(at("row_sum", i, 0)))});
        const double shifted = z - max;
        const std::string sum = n_.number(at("row_sum", i, 0)), sum_name = n_.total(index(i));
        d.lines.push_back({"the weight: this key's exponential over the sum",
                           fmt::format("{} = {} = {} = {} = {} = {}", A, n_.fraction(n_.exp(n_.sub("z", index(i, j)) + " - " + n_.max_of(index(i))), sum_name),
                                       n_.fraction(n_.exp(n_.number(z) + " - " + n_.factor(max)), sum), n_.fraction(n_.exp(n_.number(shifted)), sum),
                                       n_.fraction(n_.number(at("exp", i, j)), sum), n_.number(weight))});
        d.footnote = footnote();
        return d;
    }

    // The whole softmax of row i: the masked row, its max, the shifted values,
    // each exponential, the sum, each quotient.
    ExplainDocument weight_row() {
        const std::size_t i = target_.row;
        ExplainDocument d;
        d.heading = fmt::format("weights[{}], {}: the softmax of row {}{}", i, where(), i, quoted_label(query_labels(p_), i));
        std::vector<double> z(p_.m);
        for (std::size_t j = 0; j < p_.m; ++j) z[j] = at("masked", i, j);
        d.lines.push_back({fmt::format("the masked row (scaled scores + mask; -inf = a key this query may not read)"), n_.sub("z", index(i)) + " = " + n_.vector(z)});
        const double max = at("row_max", i, 0);
        if (std::isinf(max) && max < 0) return empty_row(std::move(d), i);
        const std::string max_name = n_.max_of(index(i));
        d.lines.push_back({"its largest value", max_name + " = " + n_.number(max)});
        std::vector<std::string> shifts, exps, quotients;
        std::vector<double> shifted(p_.m);
        for (std::size_t j = 0; j < p_.m; ++j) {
            shifted[j] = z[j] - max;
            shifts.push_back(fmt::format("{} - {}", n_.number(z[j]), n_.factor(max)));
            exps.push_back(fmt::format("{} = {}", n_.exp(n_.number(shifted[j])), n_.number(at("exp", i, j))));
            quotients.push_back(fmt::format("{} = {} = {}", n_.sub("A", index(i, j)), n_.fraction(n_.number(at("exp", i, j)), n_.number(at("row_sum", i, 0))),
                                            n_.number(at("weights", i, j))));
        }
        d.lines.push_back({"subtract it from every value (the weights do not change, and no exponential can overflow)",
                           fmt::format("{} - {} = ({}) = {}", n_.sub("z", index(i)), max_name, fmt::join(shifts, ", "), n_.vector(shifted))});
        d.lines.push_back({"each exponential (e^(-inf) = 0: a masked key gets nothing)", fmt::format("{}", fmt::join(exps, ",  "))});
        std::vector<std::string> exp_values;
        double weight_total = 0;
        for (std::size_t j = 0; j < p_.m; ++j) {
            exp_values.push_back(n_.number(at("exp", i, j)));
            weight_total += at("weights", i, j);
        }
        d.lines.push_back({"their sum", fmt::format("{} = {} = {}", n_.total(index(i)), fmt::join(exp_values, " + "), n_.number(at("row_sum", i, 0)))});
        d.lines.push_back({"each weight: its exponential over the sum", fmt::format("{}", fmt::join(quotients, ",  "))});
        d.lines.push_back({"the weights of the row add up to 1", fmt::format("{} {} = {}", n_.sum_symbol(), n_.sub("A", index(i) + "j"), n_.number(weight_total))});
        d.footnote = footnote();
        return d;
    }

    // o_i = Σ_j A_ij v_j, every term.
    ExplainDocument output_row() {
        const std::size_t i = target_.row;
        const int g = kv_head_of(p_, options_.head);
        ExplainDocument d;
        d.heading = fmt::format("out[{}], {}: the output of query {}{}, a weighted sum of the value rows", i, where(), i, quoted_label(query_labels(p_), i));
        std::vector<double> weights(p_.m);
        for (std::size_t j = 0; j < p_.m; ++j) weights[j] = at("weights", i, j);
        d.lines.push_back({fmt::format("the weights of row {} (from the softmax)", i), n_.sub("A", index(i)) + " = " + n_.vector(weights)});
        std::vector<std::vector<double>> terms;
        for (std::size_t j = 0; j < p_.m; ++j) {
            const auto v = head_row("v", j, g, p_.d_v);
            std::vector<double> term(p_.d_v);
            for (std::size_t c = 0; c < p_.d_v; ++c) term[c] = weights[j] * v[c];
            terms.push_back(term);
            d.lines.push_back({fmt::format("key {}{}: weight times value row {}{}", j, quoted_label(key_labels(p_), j), j,
                                           weights[j] == 0 ? " (weight 0: this key adds nothing)" : ""),
                               fmt::format("{} {} = {}{}{} = {}", n_.sub("A", index(i, j)), n_.sub("v", index(j)), n_.number(weights[j]), n_.times(),
                                           n_.vector(v), n_.vector(term))});
        }
        std::vector<std::string> components;
        for (std::size_t c = 0; c < p_.d_v; ++c) {
            std::vector<std::string> parts;
            for (const auto& term : terms) parts.push_back(n_.factor(term[c]));
            components.push_back(fmt::format("{}", fmt::join(parts, " + ")));
        }
        std::vector<double> out(p_.d_v);
        for (std::size_t c = 0; c < p_.d_v; ++c) out[c] = at("out", i, c);
        d.lines.push_back({"add the terms, component by component",
                           fmt::format("{} = {} {} {} = ({}) = {}", n_.sub("o", index(i)), n_.sub(n_.sum_symbol(), "j"), n_.sub("A", index(i) + "j"),
                                       n_.sub("v", "j"), fmt::join(components, ", "), n_.vector(out))});
        d.footnote = footnote();
        return d;
    }

    const Trace& trace_;
    const Problem& p_;
    const ExplainTarget& target_;
    const ExplainOptions& options_;
    Notation n_;
};

}  // namespace

ExplainTarget parse_cell_spec(const std::string& text) { return parse_spec(text, false); }
ExplainTarget parse_row_spec(const std::string& text) { return parse_spec(text, true); }

const std::vector<std::string>& explain_formats() {
    static const std::vector<std::string> formats = {"text", "markdown", "latex"};
    return formats;
}

std::string explain(const Trace& trace, const Problem& problem, const ExplainTarget& target, const ExplainOptions& options) {
    if (std::find(explain_formats().begin(), explain_formats().end(), options.format) == explain_formats().end())
        throw InputError(fmt::format("explain writes text, markdown or latex, not '{}'", options.format));
    return render_explanation(Explainer(trace, problem, target, options).explain(), options.format);
}

}  // namespace attn_trace
