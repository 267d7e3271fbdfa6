// Which cell explanation a run step gets, and how every one reads the trace. Every number
// is read from the trace the pipeline computed, or from the problem's inputs (X, W, b), or
// is one product of two such numbers, so the explanation cannot drift from the computation.
#include "explain_run.hpp"

#include <fmt/format.h>

#include "attn_trace/attention_parts.hpp"
#include "explain_run_explainer.hpp"

namespace attn_trace {

// Steps whose rows are keys, or that are recorded once for every query row: their row
// index is the problem's, not the computed query rows'.
bool key_indexed_step(StepName name) {
    using S = StepName;
    return name == S::k || name == S::v || name == S::k_rot || name == S::x_source || name == S::c_kv || name == S::k_rope || name == S::reach || name == S::k_normed || name == S::c_kv_normed;
}

ExplainDocument RunExplainer::explain() {
    using S = StepName;
    check_head_and_batch();
    const StepName name = target_.step;
    check_row(key_indexed_step(name) ? p_.m : p_.n, key_indexed_step(name) ? "the problem's keys" : "the problem's queries");
    check_column(step(name));
    if (!target_.column) return name == S::out ? output_row() : weight_row();
    // Every step is named here, so -Wswitch names this place when a step is added.
    switch (name) {
        case S::x:
        case S::x_source: return given_cell(fmt::format("the input {}", name));
        case S::c_kv:
        case S::c_q:
        case S::q_latent: return mla_product_cell();
        case S::q:
        case S::k:
        case S::v:
            if (p_.mla) return mla_product_cell();
            return p_.from_tokens() ? projection_cell() : given_cell(fmt::format("{} (Q, K, V are given)", name));
        case S::c_kv_normed:
        case S::c_q_normed:
            return formula_cell(fmt::format("RMSNorm of the latent: its value divided by the root mean square of its row (+ eps = {} under the root), "
                                            "times the norm's weight for this column",
                                            n_.number(name == S::c_kv_normed ? p_.mla->c_kv_norm->eps : p_.mla->c_q_norm->eps)));
        case S::q_normed:
        case S::k_normed:
            return formula_cell(fmt::format("RMSNorm: the projection's value divided by the root mean square of {} (+ eps = {} under the root), times {}the norm's weight for this column",
                                            p_.qk_norm->per_head ? "its head's d_k values in this row" : "the whole row", n_.number(p_.qk_norm->eps),
                                            p_.qk_norm->weight_offset != 0 ? "1 + " : ""));
        case S::q_rope:
        case S::k_rope: return formula_cell("the decoupled RoPE part: its projection turned by RoPE at this row's position");
        case S::reach:
            return formula_cell("the least number of stacked layers through which key j's information reaches query i: 1 when i reads j (or i = j, "
                                "through the residual stream), L when the shortest chain of reads i → … → j has L links, inf when there is none");
        case S::keep:
            return formula_cell(fmt::format("the portable generator's draw u for this cell, kept (1) when u ≥ p = {}, dropped (0) otherwise",
                                            n_.number(p_.dropout->p)));
        case S::dropped: return dropped_cell();
        case S::q_rot:
        case S::k_rot: return rope_cell();
        case S::scores:
        case S::scaled:
        case S::capped:
        case S::masked: return score_cell();
        case S::mask: return mask_cell();
        case S::row_max: return row_max_cell();
        case S::exp: return exp_cell();
        case S::row_sum: return row_sum_cell();
        case S::weights: return weight_cell();
        case S::out: return output_cell();
        case S::concat: return concat_cell();
        case S::final: return final_cell();
        // permute's, decode's, tiled's and grad's steps are not in run's trace
        case S::out_of_permuted: case S::permuted_out: case S::k_cache: case S::v_cache: case S::c_cache: case S::kr_cache:
        case S::m: case S::l: case S::u: case S::rescale: case S::grad_final: case S::grad_concat: case S::grad_W_O:
        case S::grad_b_O: case S::grad_out: case S::grad_v: case S::grad_dropped: case S::grad_weights: case S::grad_masked:
        case S::grad_capped: case S::grad_scaled: case S::grad_scores: case S::grad_q_rot: case S::grad_k_rot: case S::grad_q:
        case S::grad_k: case S::grad_W_Q: case S::grad_W_K: case S::grad_W_V: case S::grad_b_Q: case S::grad_b_K: case S::grad_b_V:
        case S::grad_x: case S::grad_x_source: case S::jacobian: case S::lse: case S::delta: case S::p: case S::grad_p: case S::grad_s:
        case S::given: break;
    }
    no_step(fmt::format("run has no step '{}'", name));
}

// Steps shared by the heads (inputs, projections of all heads, concat, final).
bool RunExplainer::per_head(StepName name) {
    using S = StepName;
    for (StepName shared : {S::x, S::x_source, S::q, S::k, S::v, S::q_normed, S::k_normed, S::c_kv_normed, S::c_q_normed, S::concat, S::final, S::c_kv, S::c_q, S::q_rope, S::k_rope, S::reach})
        if (name == shared) return false;
    return true;
}

StepName RunExplainer::mixer() const { return find_step(StepName::dropped, options_.head) ? StepName::dropped : StepName::weights; }

const Step& RunExplainer::step(StepName name, std::optional<int> head) const {
    const Step* s = find_step(name, per_head(name) ? std::optional<int>(head.value_or(options_.head)) : std::nullopt);
    if (!s) no_step(fmt::format("the trace has no step '{}'{}", name, why_absent(name)));
    return *s;
}

std::string RunExplainer::why_absent(StepName name) {
    if (name == StepName::q_rot || name == StepName::k_rot) return " (the problem has no rope)";
    if (name == StepName::q_normed || name == StepName::k_normed) return " (the problem has no qk_norm)";
    if (name == StepName::capped) return " (the problem has no softcap)";
    if (name == StepName::final) return " (the problem has no W_O)";
    if (name == StepName::concat) return " (one head and no W_O)";
    if (name == StepName::x || name == StepName::x_source) return " (Q, K, V are given, or no X_source)";
    return "";
}

std::size_t RunExplainer::local(StepName name, std::size_t i) const { return key_indexed_step(name) ? i : i - first_row_; }

double RunExplainer::at(StepName name, std::size_t i, std::size_t j, std::optional<int> head) const {
    return step(name, head).values(local(name, i), j);
}

std::vector<double> RunExplainer::row_of(StepName name, std::size_t i, std::size_t first, std::size_t count) const {
    const Step& s = step(name);
    const double* row = s.values.row(local(name, i));
    return {row + first, row + first + count};
}

Dtype RunExplainer::dtype() const { return parse_dtype(trace_.problem.dtype, "the trace's dtype"); }

std::vector<double> RunExplainer::head_row(StepName name, std::size_t i, int column_head, std::size_t width) const {
    if (p_.mla && (name == StepName::q || name == StepName::k)) {  // MLA's head: [content, rope] (docs/FAMILY.md#mla-multi-head-latent-attention-deepseek-v2)
        const std::size_t d = p_.mla->d_content, d_r = p_.mla->d_r, h = static_cast<std::size_t>(column_head);
        auto row = row_of(name, i, h * d, d);
        if (d_r) {
            const auto rope = name == StepName::q ? row_of(StepName::q_rope, i, h * d_r, d_r) : row_of(StepName::k_rope, i, 0, d_r);
            row.insert(row.end(), rope.begin(), rope.end());
        }
        return row;
    }
    const bool rotated = p_.rope && (name == StepName::q || name == StepName::k);
    if (rotated) return row_of(name == StepName::q ? StepName::q_rot : StepName::k_rot, i, 0, width);
    // Unrotated, the scores read what qk-norm gave (docs/PROBLEM.md#qk-norm), not the projection.
    const bool normed = p_.qk_norm && (name == StepName::q || name == StepName::k);
    if (normed) name = name == StepName::q ? StepName::q_normed : StepName::k_normed;
    return row_of(name, i, static_cast<std::size_t>(column_head) * width, width);
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

std::string RunExplainer::target_value() const { return n_.sub(step_name(target_.step), index(i_, j())) + " = " + n_.number(at(target_.step, i_, j())); }

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
            n_.chain({n_.sub(step_name(target_.step), index(i_, c)), dot.products, dot.values, n_.number(at(target_.step, i_, c))})};
}

ExplainDocument RunExplainer::given_cell(const std::string& what) {
    ExplainDocument d;
    d.heading = heading(what);
    d.lines.push_back({fmt::format("{} is an input: the problem gives it{}", what, dtype() != Dtype::f64 ? fmt::format(" (rounded to {})", dtype_name(dtype())) : ""), target_value()});
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
