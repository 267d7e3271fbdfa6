// Which cell explanation a run step gets, and how every one reads the trace. Every number
// is read from the trace the pipeline computed, or from the problem's inputs (X, W, b), or
// is one product of two such numbers, so the explanation cannot drift from the computation.
#include "explain_run.hpp"

#include <fmt/format.h>

#include "attn_trace/attention_parts.hpp"
#include "explain_run_explainer.hpp"

namespace attn_trace {

bool key_indexed_step(const std::string& name) {
    return name == "k" || name == "v" || name == "k_rot" || name == "x_source" || name == "c_kv" || name == "k_rope" || name == "reach";
}

ExplainDocument RunExplainer::explain() {
    check_head_and_batch();
    const std::string& name = target_.step;
    check_row(key_indexed_step(name) ? p_.m : p_.n, key_indexed_step(name) ? "the problem's keys" : "the problem's queries");
    check_column(step(name));
    if (!target_.column) return name == "out" ? output_row() : weight_row();
    if (name == "x" || name == "x_source") return given_cell("the input " + name);
    if (p_.mla && (name == "c_kv" || name == "c_q" || name == "q" || name == "k" || name == "v" || name == "q_latent")) return mla_product_cell();
    if (name == "q_rope" || name == "k_rope") return formula_cell("the decoupled RoPE part: its projection turned by RoPE at this row's position");
    if (name == "reach")
        return formula_cell("the least number of stacked layers through which key j's information reaches query i: 1 when i reads j (or i = j, "
                            "through the residual stream), L when the shortest chain of reads i → … → j has L links, inf when there is none");
    if (name == "keep") return formula_cell(fmt::format("the portable generator's draw u for this cell, kept (1) when u ≥ p = {}, dropped (0) otherwise",
                                                        n_.number(p_.dropout->p)));
    if (name == "dropped") return dropped_cell();
    if (name == "q" || name == "k" || name == "v") return p_.from_tokens() ? projection_cell() : given_cell(name + " (Q, K, V are given)");
    if (name == "q_rot" || name == "k_rot") return rope_cell();
    if (name == "scores" || name == "scaled" || name == "capped" || name == "masked") return score_cell();
    if (name == "mask") return mask_cell();
    if (name == "row_max") return row_max_cell();
    if (name == "exp") return exp_cell();
    if (name == "row_sum") return row_sum_cell();
    if (name == "weights") return weight_cell();
    if (name == "out") return output_cell();
    if (name == "concat") return concat_cell();
    if (name == "final") return final_cell();
    no_step(fmt::format("run has no step '{}'", name));
}

bool RunExplainer::per_head(const std::string& name) {
    for (const char* shared : {"x", "x_source", "q", "k", "v", "concat", "final", "c_kv", "c_q", "q_rope", "k_rope", "reach"})
        if (name == shared) return false;
    return true;
}

std::string RunExplainer::mixer() const { return find_step("dropped", options_.head) ? "dropped" : "weights"; }

const Step& RunExplainer::step(const std::string& name, std::optional<int> head) const {
    const Step* s = find_step(name, per_head(name) ? std::optional<int>(head.value_or(options_.head)) : std::nullopt);
    if (!s) no_step(fmt::format("the trace has no step '{}'{}", name, why_absent(name)));
    return *s;
}

std::string RunExplainer::why_absent(const std::string& name) {
    if (name == "q_rot" || name == "k_rot") return " (the problem has no rope)";
    if (name == "capped") return " (the problem has no softcap)";
    if (name == "final") return " (the problem has no W_O)";
    if (name == "concat") return " (one head and no W_O)";
    if (name == "x" || name == "x_source") return " (Q, K, V are given, or no X_source)";
    return "";
}

std::size_t RunExplainer::local(const std::string& name, std::size_t i) const { return key_indexed_step(name) ? i : i - first_row_; }

double RunExplainer::at(const std::string& name, std::size_t i, std::size_t j, std::optional<int> head) const {
    return step(name, head).values(local(name, i), j);
}

std::vector<double> RunExplainer::row_of(const std::string& name, std::size_t i, std::size_t first, std::size_t count) const {
    const Step& s = step(name);
    const double* row = s.values.row(local(name, i));
    return {row + first, row + first + count};
}

bool RunExplainer::f32() const { return parse_dtype(trace_.problem.dtype, "the trace's dtype") == Dtype::f32; }

std::vector<double> RunExplainer::head_row(const std::string& name, std::size_t i, int column_head, std::size_t width) const {
    if (p_.mla && (name == "q" || name == "k")) {  // MLA's head: [content, rope] (docs/FAMILY.md#mla-multi-head-latent-attention-deepseek-v2)
        const std::size_t d = p_.mla->d_content, d_r = p_.mla->d_r, h = static_cast<std::size_t>(column_head);
        auto row = row_of(name, i, h * d, d);
        if (d_r) {
            const auto rope = name == "q" ? row_of("q_rope", i, h * d_r, d_r) : row_of("k_rope", i, 0, d_r);
            row.insert(row.end(), rope.begin(), rope.end());
        }
        return row;
    }
    const bool rotated = p_.rope && (name == "q" || name == "k");
    return rotated ? row_of(name + "_rot", i, 0, width) : row_of(name, i, static_cast<std::size_t>(column_head) * width, width);
}

std::vector<double> RunExplainer::column_values(const Matrix& w, std::size_t c) {
    std::vector<double> column(w.rows());
    for (std::size_t t = 0; t < w.rows(); ++t) column[t] = w(t, c);
    return column;
}

std::string RunExplainer::column_of(const std::string& matrix, std::size_t c) const {
    return n_.latex() ? matrix.substr(0, 2) + "{" + matrix.substr(2) + ",:," + index(c) + "}" : matrix + "[:," + index(c) + "]";
}

std::string RunExplainer::heading(const std::string& what) const {
    return fmt::format("{}[{},{}], {}: {}", target_.step, i_, j(), per_head(target_.step) ? where() : p_.batched ? fmt::format("batch {}", options_.batch) : "all heads", what);
}

std::string RunExplainer::target_value() const { return n_.sub(target_.step, index(i_, j())) + " = " + n_.number(at(target_.step, i_, j())); }

RunExplainer::DotTerms RunExplainer::dot_terms(const std::vector<double>& a, const std::vector<double>& b, std::optional<double> bias) const {
    std::vector<std::string> products, values;
    for (std::size_t t = 0; t < a.size(); ++t) {
        products.push_back(n_.factor(a[t]) + n_.times() + n_.factor(b[t]));
        values.push_back(n_.factor(a[t] * b[t]));
    }
    if (bias) {
        products.push_back(n_.factor(*bias));
        values.push_back(n_.factor(*bias));
    }
    return {n_.terms(products, " + ", 3), n_.terms(values, " + ", 6)};
}

ExplainLine RunExplainer::product_line(const std::vector<double>& row, const std::vector<double>& column, const std::string& bias_name,
                                       std::optional<double> bias) const {
    const std::size_t c = j();
    const DotTerms dot = dot_terms(row, column, bias);
    return {bias ? fmt::format("multiply the pairs and add, then the bias {}[{}]", bias_name, c) : "multiply the pairs and add",
            n_.chain({n_.sub(target_.step, index(i_, c)), dot.products, dot.values, n_.number(at(target_.step, i_, c))})};
}

ExplainDocument RunExplainer::given_cell(const std::string& what) {
    ExplainDocument d;
    d.heading = heading(what);
    d.lines.push_back({fmt::format("{} is an input: the problem gives it{}", what, f32() ? " (rounded to float32)" : ""), target_value()});
    return finish(d);
}

ExplainDocument RunExplainer::formula_cell(const std::string& what) {
    ExplainDocument d;
    d.heading = heading(step(target_.step).formula);
    d.lines.push_back({what, target_value()});
    return finish(d);
}

ExplainDocument explain_run_step(const Trace& trace, const Problem& problem, const ExplainTarget& target, const ExplainOptions& options,
                                 std::size_t first_row) {
    return RunExplainer(trace, problem, target, options, first_row).explain();
}

}  // namespace attn_trace
