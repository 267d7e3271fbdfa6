// Every number below is read from the grad trace or the forward trace, so an
// explanation cannot drift from the computation.
#include "explain_grad.hpp"

#include <fmt/format.h>

#include "attn_trace/attention_parts.hpp"

namespace attn_trace {

namespace {

class GradExplainer : ExplainContext {
public:
    GradExplainer(const Trace& grad, const Trace& forward, const Problem& problem, const ExplainTarget& target, const ExplainOptions& options)
        : ExplainContext(grad, problem, target, options), forward_(forward) {}

    ExplainDocument explain() {
        check_head_and_batch();
        const std::string& name = target_.step;
        const Step* s = grad_step(name);
        if (!s) no_step(fmt::format("grad has no step '{}'", name));
        check_row(s->values.rows(), "the step's rows");
        check_column(*s);
        if (!target_.column) no_step("a grad step is explained one cell at a time: give STEP[i,j]");
        if (name == "grad_masked") return masked_cell();
        if (name == "grad_weights" && !find_step("grad_dropped", options_.head)) return weights_cell();
        if (name == "grad_v") return value_cell();
        if (name == "grad_scores") return scores_cell();
        return formula_cell(*s);
    }

private:
    const Step* grad_step(const std::string& name) const {
        const Step* s = find_step(name, options_.head);
        return s ? s : find_step(name, std::nullopt);
    }
    double grad(const std::string& name, std::size_t i, std::size_t j) const { return grad_step(name)->values(i, j); }
    const Matrix& forward(const std::string& name, std::optional<int> head) const {
        const Step* s = forward_.find(name, head, p_.batched ? std::optional<int>(options_.batch) : std::nullopt, std::nullopt, std::nullopt);
        return s->values;
    }
    std::size_t i() const { return target_.row; }
    std::size_t j() const { return *target_.column; }
    std::string heading(const std::string& what) const { return fmt::format("{}[{},{}], {}: {}", target_.step, i(), j(), where(), what); }

    ExplainDocument formula_cell(const Step& s) {
        ExplainDocument d;
        d.heading = heading(s.formula);
        d.lines.push_back({"the value the backward pass computed", n_.sub(target_.step, index(i(), j())) + " = " + n_.number(s.values(i(), j()))});
        return finish(d);
    }

    // a_ij · (g_ij − Σ_l g_il a_il): the softmax backward of one cell.
    ExplainDocument masked_cell() {
        const Matrix& a = forward("weights", options_.head);
        double inner = 0;
        for (std::size_t l = 0; l < a.cols(); ++l) inner += grad("grad_weights", i(), l) * a(i(), l);
        const auto products = elided(a.cols(), [&](std::size_t l) { return n_.factor(grad("grad_weights", i(), l)) + n_.times() + n_.factor(a(i(), l)); });
        ExplainDocument d;
        d.heading = heading("the softmax backward of one cell");
        d.lines.push_back({fmt::format("what row {} of the weights passes back on average: Σ_l g_{}l a_{}l", i(), i(), i()),
                           n_.chain({n_.terms(products, " + ", 4), n_.number(inner)})});
        d.lines.push_back({a(i(), j()) == 0 ? "the weight is 0 (a blocked key, or one the row does not read): no gradient passes"
                                            : "this cell's weight times its own gradient minus that average",
                           n_.chain({n_.sub("grad_z", index(i(), j())), n_.number(a(i(), j())) + n_.times() + "(" + n_.number(grad("grad_weights", i(), j())) +
                                                                             " - " + n_.factor(inner) + ")",
                                     n_.number(grad("grad_masked", i(), j()))})});
        return finish(d);
    }

    // grad_out_i · v_j
    ExplainDocument weights_cell() {
        const int g = kv_head_of(p_, options_.head);
        const Matrix v = forward("v", std::nullopt).columns(static_cast<std::size_t>(g) * p_.d_v, p_.d_v);
        const auto products = elided(p_.d_v, [&](std::size_t c) { return n_.factor(grad("grad_out", i(), c)) + n_.times() + n_.factor(v(j(), c)); });
        ExplainDocument d;
        d.heading = heading("how L moves with weight a_ij: the output's gradient dotted with value j");
        d.lines.push_back({fmt::format("row {} of grad_out times row {} of V", i(), j()),
                           n_.chain({n_.sub("grad_A", index(i(), j())), n_.terms(products, " + ", 4), n_.number(grad("grad_weights", i(), j()))})});
        return finish(d);
    }

    // Σ_i a_ij grad_out_ic (every query head that reads the KV head, with GQA)
    ExplainDocument value_cell() {
        std::vector<std::string> products;
        double total = 0;
        for (int h = 0; h < p_.heads; ++h) {
            if (kv_head_of(p_, h) != options_.head) continue;
            const Matrix& a = mixing(h);
            const Step* out = find_step("grad_out", h);
            for (std::size_t r = 0; r < a.rows(); ++r) {
                products.push_back(n_.factor(a(r, i())) + n_.times() + n_.factor(out->values(r, j())));
                total += a(r, i()) * out->values(r, j());
            }
        }
        ExplainDocument d;
        d.heading = heading("value j reaches every query that reads it, through its weight");
        d.lines.push_back({fmt::format("Σ over the queries (and the query heads of KV head {}) of a_qj · grad_out_q,{}", options_.head, j()),
                           n_.chain({n_.terms(products, " + ", 4), n_.number(grad("grad_v", i(), j()))})});
        return finish(d);
    }
    const Matrix& mixing(int h) const {
        const Step* s = forward_.find("dropped", h, p_.batched ? std::optional<int>(options_.batch) : std::nullopt, std::nullopt, std::nullopt);
        return s ? s->values : forward("weights", h);
    }

    ExplainDocument scores_cell() {
        ExplainDocument d;
        d.heading = heading("the scale passes the gradient on, multiplied by s");
        d.lines.push_back({"s times grad_scaled", n_.chain({n_.number(p_.scale_factor()) + n_.times() + n_.factor(grad("grad_scaled", i(), j())),
                                                            n_.number(grad("grad_scores", i(), j()))})});
        return finish(d);
    }

    const Trace& forward_;
};

}  // namespace

ExplainDocument explain_grad_step(const Trace& grad, const Trace& forward, const Problem& problem, const ExplainTarget& target,
                                  const ExplainOptions& options) {
    return GradExplainer(grad, forward, problem, target, options).explain();
}

}  // namespace attn_trace
