// Every number below is read from the grad trace or the forward trace, so an
// explanation cannot drift from the computation.
#include "explain_grad.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "attn_trace/attention_parts.hpp"
#include "attn_trace/errors.hpp"

namespace attn_trace {

namespace {

class GradExplainer : ExplainContext {
public:
    GradExplainer(const Trace& grad, const Trace& forward, const Problem& problem, const ExplainTarget& target, const ExplainOptions& options)
        : ExplainContext(grad, problem, target, options), grad_(grad), forward_(forward) {}

    ExplainDocument explain() {
        check_head_and_batch();
        const StepName name = target_.step;
        const Step* s = target_step(name);
        if (!s && per_head(name))  // grad_k and grad_v have one per KV head
            throw InputError(fmt::format("⟦head⟧ {}: {} is per KV head and the problem has {} (0 to {})", options_.head, name, p_.kv_heads, p_.kv_heads - 1));
        if (!s) no_step(fmt::format("grad has no step '{}'", name));
        check_row(s->values.rows(), "the step's rows");
        check_column(*s);
        if (!target_.column) no_step("a grad step is explained one cell at a time: give STEP[i,j]");
        if (name == StepName::grad_masked) return masked_cell();
        const bool dropping = find_step(StepName::grad_dropped, options_.head) != nullptr;
        if (name == StepName::grad_dropped || (name == StepName::grad_weights && !dropping)) return weights_cell();
        if (name == StepName::grad_weights) return kept_cell();
        if (name == StepName::grad_v) return value_cell();
        if (name == StepName::grad_scores) return scores_cell();
        if (name == StepName::grad_q_rot || (name == StepName::grad_q && !p_.rope)) return query_cell();
        if (name == StepName::grad_k_rot || (name == StepName::grad_k && !p_.rope)) return key_cell();
        if (name == StepName::grad_concat && p_.W_O) return concat_cell();
        if (name == StepName::grad_x || name == StepName::grad_x_source) return input_cell();
        using S = StepName;
        for (StepName parameter : {S::grad_W_Q, S::grad_W_K, S::grad_W_V, S::grad_W_O, S::grad_b_Q, S::grad_b_K, S::grad_b_V, S::grad_b_O})
            if (name == parameter) return parameter_cell();
        return formula_cell(*s);
    }

private:
    bool per_head(StepName name) const {
        return std::any_of(grad_.steps.begin(), grad_.steps.end(), [&](const Step& s) { return s.name == name && s.head; });
    }
    // This head's step, the sequence's step, or the problem's (the weight gradients sum over the batch).
    // The target's step, or null (explain() says why).
    const Step* target_step(StepName name) const {
        if (per_head(name)) return find_step(name, options_.head);
        if (const Step* s = find_step(name, std::nullopt)) return s;
        return grad_.find(name, std::nullopt, std::nullopt, std::nullopt, std::nullopt);
    }
    // A step the explanation reads.
    const Step* grad_step(StepName name) const { return present(target_step(name), name); }
    // A step the explanation reads must be there (grad --tiled keeps no grad_scores, say).
    const Step* present(const Step* step, StepName name) const {
        if (step == nullptr) throw InputError(fmt::format("'{}': explaining it reads the backward's {} step, which this trace does not keep", target_.spec, name));
        return step;
    }
    double grad(StepName name, std::size_t i, std::size_t j) const { return grad_step(name)->values(i, j); }
    const Matrix& forward(StepName name, std::optional<int> head) const {
        return present(forward_.find(name, head, p_.batched ? std::optional<int>(options_.batch) : std::nullopt, std::nullopt, std::nullopt), name)->values;
    }
    std::size_t i() const { return target_.row; }
    std::size_t j() const { return *target_.column; }
    std::string heading(const std::string& what) const { return fmt::format("{}[{},{}], {}: {}", target_.step, i(), j(), where(), what); }

    ExplainDocument formula_cell(const Step& s) {
        ExplainDocument d;
        d.heading = heading(s.formula);
        d.lines.push_back({"the value the backward pass computed", n_.sub(step_name(target_.step), index(i(), j())) + " = " + n_.number(s.values(i(), j()))});
        return finish(d);
    }

    // a_ij · (g_ij − Σ_l g_il a_il): the softmax backward of one cell.
    ExplainDocument masked_cell() {
        const Matrix& a = forward(StepName::weights, options_.head);
        double inner = 0;
        for (std::size_t l = 0; l < a.cols(); ++l) inner += grad(StepName::grad_weights, i(), l) * a(i(), l);
        const auto products = elided(a.cols(), [&](std::size_t l) { return n_.factor(grad(StepName::grad_weights, i(), l)) + n_.times() + n_.factor(a(i(), l)); });
        ExplainDocument d;
        d.heading = heading("the softmax backward of one cell");
        d.lines.push_back({fmt::format("what row {} of the weights passes back on average: Σ_l g_{}l a_{}l", i(), i(), i()),
                           n_.chain({n_.terms(products, " + ", 4), n_.number(inner)})});
        d.lines.push_back({a(i(), j()) == 0 ? "the weight is 0 (a blocked key, or one the row does not read): no gradient passes"
                                            : "this cell's weight times its own gradient minus that average",
                           n_.chain({symbol(), n_.number(a(i(), j())) + n_.times() + "(" + n_.number(grad(StepName::grad_weights, i(), j())) +
                                                                             " - " + n_.factor(inner) + ")",
                                     n_.number(grad(StepName::grad_masked, i(), j()))})});
        return finish(d);
    }

    // One cell that is a sum: the heading, what is summed, and every term written out.
    // The sum starts from the cell as docs/NOTATION.md writes it (dA_ij for grad_weights).
    ExplainDocument sum_cell(const std::string& what, const std::string& summed, const std::vector<std::string>& parts) {
        ExplainDocument d;
        d.heading = heading(what);
        d.lines.push_back({summed, n_.chain({symbol(), n_.terms(elided(parts.size(), [&](std::size_t l) { return parts[l]; }), " + ", 4),
                                             n_.number(grad_step(target_.step)->values(i(), j()))})});
        return finish(d);
    }
    // In LaTeX the step table's own symbol (\mathrm{d}W_{Q}), braced so that the cell's indices are its subscript.
    std::string symbol() const {
        return n_.latex() ? "{" + std::string(step_symbol_latex(target_.step)) + "}_{" + index(i(), j()) + "}"
                          : n_.sub(std::string(step_symbol(target_.step)), index(i(), j()));
    }
    std::string product(double a, double b) const { return n_.factor(a) + n_.times() + n_.factor(b); }
    // Row r of a times column c of b's transpose: Σ_l a_rl · b_cl, as terms.
    std::vector<std::string> row_dot_row(const Matrix& a, std::size_t r, const Matrix& b, std::size_t c) const {
        std::vector<std::string> parts;
        for (std::size_t l = 0; l < a.cols(); ++l) parts.push_back(product(a(r, l), b(c, l)));
        return parts;
    }

    // grad_out_i · v_j
    ExplainDocument weights_cell() {
        const int g = kv_head_of(p_, options_.head);
        const Matrix v = forward(StepName::v, std::nullopt).columns(static_cast<std::size_t>(g) * p_.d_v, p_.d_v);
        return sum_cell("how L moves with weight a_ij: the output's gradient dotted with value j", fmt::format("row {} of grad_out times row {} of V", i(), j()),
                        row_dot_row(grad_step(StepName::grad_out)->values, i(), v, j()));
    }

    // grad_dropped_ij · keep_ij / (1 − p): a dropped weight passes nothing back, a kept one 1/(1 − p) times more.
    ExplainDocument kept_cell() {
        const double keep = forward(StepName::keep, options_.head)(i(), j()), p = p_.dropout->p;
        ExplainDocument d;
        d.heading = heading(keep == 0 ? "weight a_ij was dropped: no gradient reaches it" : "weight a_ij was kept and scaled by 1/(1 − p)");
        d.lines.push_back({"grad_dropped times keep, divided by 1 − p",
                           n_.chain({symbol(), n_.factor(grad(StepName::grad_dropped, i(), j())) + n_.times() + n_.factor(keep) + " / " + n_.factor(1 - p),
                                     n_.number(grad(StepName::grad_weights, i(), j()))})});
        return finish(d);
    }

    // Σ_i a_ij grad_out_ic (every query head that reads the KV head, with GQA)
    ExplainDocument value_cell() {
        std::vector<std::string> products;
        for (int h : query_heads_of(options_.head)) {
            const Matrix& a = mixing(h);
            const Step* out = present(find_step(StepName::grad_out, h), StepName::grad_out);
            for (std::size_t r = 0; r < a.rows(); ++r) products.push_back(product(a(r, i()), out->values(r, j())));
        }
        return sum_cell("value j reaches every query that reads it, through its weight",
                        fmt::format("Σ over the queries (and the query heads of KV head {}) of a_qj · grad_out_q,{}", options_.head, j()), products);
    }
    std::vector<int> query_heads_of(int kv_head) const {
        std::vector<int> heads;
        for (int h = 0; h < p_.heads; ++h)
            if (kv_head_of(p_, h) == kv_head) heads.push_back(h);
        return heads;
    }

    // Σ_j grad_scores_ij k_jc: query i moves every score of its row, each through one key.
    ExplainDocument query_cell() {
        const int h = options_.head, g = kv_head_of(p_, h);
        const Matrix k = p_.rope ? forward(StepName::k_rot, h) : forward(StepName::k, std::nullopt).columns(static_cast<std::size_t>(g) * p_.d_k, p_.d_k);
        const Matrix& scores = grad_step(StepName::grad_scores)->values;
        std::vector<std::string> parts;
        for (std::size_t l = 0; l < scores.cols(); ++l) parts.push_back(product(scores(i(), l), k(l, j())));
        return sum_cell(fmt::format("the gradient of query {} mixes the keys{} by its row of grad_scores", i(), p_.rope ? " (rotated)" : ""),
                        fmt::format("Σ_j grad_scores_{},j · k_j,{}", i(), j()), parts);
    }

    // Σ_q grad_scores_qj q_qc: key j moves one score in every row (of every query head that reads it).
    ExplainDocument key_cell() {
        const bool rotated = target_.step == StepName::grad_k_rot;  // per query head; grad_k is per KV head
        std::vector<std::string> parts;
        for (int h : rotated ? std::vector<int>{options_.head} : query_heads_of(options_.head)) {
            const Matrix q = rotated ? forward(StepName::q_rot, h) : forward(StepName::q, std::nullopt).columns(static_cast<std::size_t>(h) * p_.d_k, p_.d_k);
            const Matrix& scores = present(find_step(StepName::grad_scores, h), StepName::grad_scores)->values;
            for (std::size_t r = 0; r < scores.rows(); ++r) parts.push_back(product(scores(r, i()), q(r, j())));
        }
        const std::string heads = rotated || p_.kv_heads == p_.heads ? "" : fmt::format(" (and the query heads of KV head {})", options_.head);
        return sum_cell(fmt::format("the gradient of key {} collects its column of grad_scores, each through one query", i()),
                        fmt::format("Σ over the queries{} of grad_scores_q,{} · q_q,{}", heads, i(), j()), parts);
    }

    // Σ_c grad_final_ic W_O,rc
    ExplainDocument concat_cell() {
        return sum_cell("W_O passes the output's gradient back to the heads' columns", fmt::format("row {} of grad_final times row {} of W_O", i(), j()),
                        row_dot_row(grad_step(StepName::grad_final)->values, i(), *p_.W_O, j()));
    }

    // The whole (rows, heads · width) gradient of one projection in sequence b: its heads side by side.
    Matrix joined(StepName name, int heads, std::size_t width, std::size_t b) const {
        Matrix out;
        for (int h = 0; h < heads; ++h) {
            const Step* s = present(grad_.find(name, h, p_.batched ? std::optional<int>(static_cast<int>(b)) : std::nullopt, std::nullopt, std::nullopt), name);
            if (out.empty()) out = Matrix(s->values.rows(), static_cast<std::size_t>(heads) * width);
            for (std::size_t r = 0; r < s->values.rows(); ++r)
                for (std::size_t c = 0; c < width; ++c) out(r, static_cast<std::size_t>(h) * width + c) = s->values(r, c);
        }
        return out;
    }
    Matrix joined(char which, std::size_t b) const {
        if (which == 'Q') return joined(StepName::grad_q, p_.heads, p_.d_k, b);
        return which == 'K' ? joined(StepName::grad_k, p_.kv_heads, p_.d_k, b) : joined(StepName::grad_v, p_.kv_heads, p_.d_v, b);
    }
    const Matrix& weight(char which) const { return which == 'Q' ? *p_.W_Q : which == 'K' ? *p_.W_K : *p_.W_V; }

    // grad_x_ir = Σ_c grad_q_ic W_Q,rc (+ the same through W_K and W_V where X is also the source).
    ExplainDocument input_cell() {
        const std::size_t b = static_cast<std::size_t>(p_.batched ? options_.batch : 0);
        const std::string parts_of = target_.step == StepName::grad_x_source ? "KV" : p_.cross_attention() ? "Q" : "QKV";
        ExplainDocument d;
        d.heading = heading(fmt::format("token {} reaches L through its {}", i(), parts_of == "Q" ? "query" : parts_of == "KV" ? "key and value" : "query, key and value"));
        std::vector<std::string> totals;
        for (char which : parts_of) {
            const Matrix g = joined(which, b);
            double part = 0;
            for (std::size_t c = 0; c < g.cols(); ++c) part += g(i(), c) * weight(which)(j(), c);
            const auto products = row_dot_row(g, i(), weight(which), j());
            d.lines.push_back({fmt::format("through W_{}: row {} of grad_{} times row {} of W_{}", which, i(), char(std::tolower(which)), j(), which),
                               n_.chain({n_.terms(elided(products.size(), [&](std::size_t l) { return products[l]; }), " + ", 4), n_.number(part)})});
            totals.push_back(n_.factor(part));
        }
        if (totals.size() > 1)
            d.lines.push_back({"the parts added", n_.chain({n_.terms(totals, " + ", 4), n_.number(grad_step(target_.step)->values(i(), j()))})});
        return finish(d);
    }

    // grad_W_rc = Σ_b Σ_i input_ir grad_ic, grad_b_c = Σ_b Σ_i grad_ic: a parameter is shared by every token (and sequence).
    ExplainDocument parameter_cell() {
        const std::string& name = step_name(target_.step);  // grad_W_Q … grad_b_O: which matrix, and whether a bias
        const char which = name.back();
        const bool bias = name[5] == 'b';
        std::vector<std::string> parts;
        for (std::size_t b = 0; b < p_.batch; ++b) {
            const std::optional<int> at = p_.batched ? std::optional<int>(static_cast<int>(b)) : std::nullopt;
            const Matrix g = which == 'O' ? present(grad_.find(StepName::grad_final, std::nullopt, at, std::nullopt, std::nullopt), StepName::grad_final)->values : joined(which, b);
            const Matrix& input = which == 'O' ? present(forward_.find(StepName::concat, std::nullopt, at, std::nullopt, std::nullopt), StepName::concat)->values
                                  : which == 'Q' || !p_.cross_attention() ? p_.X[b] : p_.X_source[b];
            for (std::size_t r = 0; r < g.rows(); ++r) parts.push_back(bias ? n_.factor(g(r, j())) : product(input(r, i()), g(r, j())));
        }
        const std::string input = which == 'O' ? "concat" : which == 'Q' || !p_.cross_attention() ? "X" : "X_source";
        const std::string over = p_.batch > 1 ? " and every sequence of the batch" : "";
        return sum_cell(fmt::format("one weight serves every token{}: its gradient sums theirs", over),
                        bias ? fmt::format("Σ over the rows of column {} of {}", j(), which == 'O' ? "grad_final" : fmt::format("grad_{}", char(std::tolower(which))))
                             : fmt::format("Σ over the rows of {}_r,{} · {}_r,{}", input, i(), which == 'O' ? "grad_final" : fmt::format("grad_{}", char(std::tolower(which))), j()),
                        parts);
    }

    const Matrix& mixing(int h) const {
        const Step* s = forward_.find(StepName::dropped, h, p_.batched ? std::optional<int>(options_.batch) : std::nullopt, std::nullopt, std::nullopt);
        return s ? s->values : forward(StepName::weights, h);
    }

    ExplainDocument scores_cell() {
        ExplainDocument d;
        d.heading = heading("the scale passes the gradient on, multiplied by s");
        d.lines.push_back({"s times grad_scaled", n_.chain({symbol(), n_.number(p_.scale_factor()) + n_.times() + n_.factor(grad(StepName::grad_scaled, i(), j())),
                                                            n_.number(grad(StepName::grad_scores, i(), j()))})});
        return finish(d);
    }

    const Trace& grad_;
    const Trace& forward_;
};

}  // namespace

ExplainDocument explain_grad_step(const Trace& grad, const Trace& forward, const Problem& problem, const ExplainTarget& target,
                                  const ExplainOptions& options) {
    return GradExplainer(grad, forward, problem, target, options).explain();
}

}  // namespace attn_trace
