// Every number below is read from the trace the pipeline computed, or from the
// problem's inputs (X, W, b), or is one product of two such numbers, so the
// explanation cannot drift from the computation.
#include "explain_run.hpp"

#include <cmath>

#include <fmt/format.h>

#include "attn_trace/attention_parts.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/mask.hpp"
#include "attn_trace/render.hpp"

namespace attn_trace {

bool key_indexed_step(const std::string& name) {
    return name == "k" || name == "v" || name == "k_rot" || name == "x_source" || name == "c_kv" || name == "k_rope" || name == "reach";
}

namespace {

class RunExplainer : ExplainContext {
public:
    RunExplainer(const Trace& trace, const Problem& problem, const ExplainTarget& target, const ExplainOptions& options, std::size_t first_row)
        : ExplainContext(trace, problem, target, options), first_row_(first_row) {}

    ExplainDocument explain() {
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

private:
    static bool per_head(const std::string& name) {
        for (const char* shared : {"x", "x_source", "q", "k", "v", "concat", "final", "c_kv", "c_q", "q_rope", "k_rope", "reach"})
            if (name == shared) return false;
        return true;
    }
    // What A V mixes the values with: the weights, or after dropout the dropped weights.
    std::string mixer() const { return find_step("dropped", options_.head) ? "dropped" : "weights"; }
    const Step& step(const std::string& name, std::optional<int> head = std::nullopt) const {
        const Step* s = find_step(name, per_head(name) ? std::optional<int>(head.value_or(options_.head)) : std::nullopt);
        if (!s) no_step(fmt::format("the trace has no step '{}'{}", name, why_absent(name)));
        return *s;
    }
    static std::string why_absent(const std::string& name) {
        if (name == "q_rot" || name == "k_rot") return " (the problem has no rope)";
        if (name == "capped") return " (the problem has no softcap)";
        if (name == "final") return " (the problem has no W_O)";
        if (name == "concat") return " (one head and no W_O)";
        if (name == "x" || name == "x_source") return " (Q, K, V are given, or no X_source)";
        return "";
    }
    // Row i (the true query index) of a step; key-indexed steps hold every row.
    std::size_t local(const std::string& name, std::size_t i) const { return key_indexed_step(name) ? i : i - first_row_; }
    double at(const std::string& name, std::size_t i, std::size_t j, std::optional<int> head = std::nullopt) const {
        return step(name, head).values(local(name, i), j);
    }
    std::vector<double> row_of(const std::string& name, std::size_t i, std::size_t first, std::size_t count) const {
        const Step& s = step(name);
        const double* row = s.values.row(local(name, i));
        return {row + first, row + first + count};
    }
    bool f32() const { return parse_dtype(trace_.problem.dtype, "the trace's dtype") == Dtype::f32; }
    const std::size_t i_ = target_.row;
    std::size_t j() const { return *target_.column; }

    // Row i of the head's slice of a side-by-side step (q, k, v), or of its RoPE step.
    std::vector<double> head_row(const std::string& name, std::size_t i, int column_head, std::size_t width) const {
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

    // W_Q[:,3] / W_{Q\,:,3}
    std::string column_of(const std::string& matrix, std::size_t c) const {
        return n_.latex() ? matrix.substr(0, 2) + "{" + matrix.substr(2) + ",:," + index(c) + "}" : matrix + "[:," + index(c) + "]";
    }
    std::string heading(const std::string& what) const {
        return fmt::format("{}[{},{}], {}: {}", target_.step, i_, j(), per_head(target_.step) ? where() : p_.batched ? fmt::format("batch {}", options_.batch) : "all heads", what);
    }

    ExplainDocument given_cell(const std::string& what) {
        ExplainDocument d;
        d.heading = heading(what);
        d.lines.push_back({fmt::format("{} is an input: the problem gives it{}", what, f32() ? " (rounded to float32)" : ""),
                           n_.sub(target_.step, index(i_, j())) + " = " + n_.number(at(target_.step, i_, j()))});
        return finish(d);
    }

    // q_ic = x_i · W_Q[:, c] + b_c (k and v read X_source in cross-attention).
    ExplainDocument projection_cell() {
        const std::string& name = target_.step;
        const bool query = name == "q";
        const Matrix& W = name == "q" ? *p_.W_Q : name == "k" ? *p_.W_K : *p_.W_V;
        const auto& bias = name == "q" ? p_.b_Q : name == "k" ? p_.b_K : p_.b_V;
        const Matrix& x = query || !p_.cross_attention() ? p_.X[static_cast<std::size_t>(options_.batch)] : p_.X_source[static_cast<std::size_t>(options_.batch)];
        const std::size_t width = name == "v" ? p_.d_v : p_.d_k, c = j();
        const std::string big = name == "q" ? "Q" : name == "k" ? "K" : "V";
        ExplainDocument d;
        d.heading = heading(fmt::format("column {} of {} is column {} of {} head {}", c, big, c % width, query ? "query" : "KV", c / width));
        std::vector<double> input(x.row(i_), x.row(i_) + x.cols()), column(W.rows());
        for (std::size_t t = 0; t < W.rows(); ++t) column[t] = W(t, c);
        const std::string x_name = query || !p_.cross_attention() ? "x" : "x^{src}";
        d.lines.push_back({fmt::format("row {} of {}{}", i_, query || !p_.cross_attention() ? "X" : "X_source", quoted_label(query ? query_labels(p_) : key_labels(p_), i_)),
                           n_.sub(n_.latex() ? x_name : (query || !p_.cross_attention() ? "x" : "xsrc"), index(i_)) + " = " + n_.vector(input)});
        d.lines.push_back({fmt::format("column {} of W_{}", c, big), column_of("W_" + big, c) + " = " + n_.vector(column)});
        std::vector<std::string> products, terms;
        for (std::size_t t = 0; t < column.size(); ++t) {
            products.push_back(n_.factor(input[t]) + n_.times() + n_.factor(column[t]));
            terms.push_back(n_.factor(input[t] * column[t]));
        }
        if (bias) {
            products.push_back(n_.factor((*bias)[c]));
            terms.push_back(n_.factor((*bias)[c]));
        }
        d.lines.push_back({fmt::format("multiply the pairs and add{}", bias ? fmt::format(", then the bias b_{}[{}]", big, c) : ""),
                           n_.chain({n_.sub(name, index(i_, c)), n_.terms(products, " + ", 3), n_.terms(terms, " + ", 6), n_.number(at(name, i_, c))})});
        return finish(d);
    }

    // A cell that is one formula of other steps: what it is and its value.
    ExplainDocument formula_cell(const std::string& what) {
        ExplainDocument d;
        d.heading = heading(step(target_.step).formula);
        d.lines.push_back({what, n_.sub(target_.step, index(i_, j())) + " = " + n_.number(at(target_.step, i_, j()))});
        return finish(d);
    }

    // dropped_ij = a_ij · keep_ij / (1 − p)
    ExplainDocument dropped_cell() {
        const double a = at("weights", i_, j()), keep = at("keep", i_, j()), p = p_.dropout->p;
        ExplainDocument d;
        d.heading = heading("the weight after dropout");
        d.lines.push_back({keep == 0 ? "this weight is dropped (keep = 0)" : "this weight is kept (keep = 1) and scaled up by 1 / (1 − p)",
                           n_.chain({n_.sub("A'", index(i_, j())), n_.number(a) + n_.times() + n_.number(keep) + " / " + n_.number(1 - p),
                                     n_.number(at("dropped", i_, j()))})});
        return finish(d);
    }

    // MLA's products (docs/FAMILY.md#mla-multi-head-latent-attention-deepseek-v2): c_kv =
    // X_src W_DKV, c_q = X W_DQ, q = c_q W_UQ (or X W_Q + b_Q), k = c_kv W_UK, v = c_kv
    // W_UV, q_latent = q_h W_UK,hᵀ: a row of the left times a column of the right.
    ExplainDocument mla_product_cell() {
        const std::string& name = target_.step;
        const Mla& mla = *p_.mla;
        const std::size_t b = static_cast<std::size_t>(options_.batch), c = j();
        const Matrix& source = p_.cross_attention() ? p_.X_source[b] : p_.X[b];
        std::vector<double> left, right;
        std::string left_name, right_name;
        const auto column = [&](const Matrix& w, const std::string& label) {
            for (std::size_t t = 0; t < w.rows(); ++t) right.push_back(w(t, c));
            right_name = label + "[:," + index(c) + "]";
        };
        if (name == "c_kv") {
            left.assign(source.row(i_), source.row(i_) + source.cols());
            left_name = "row " + index(i_) + " of " + (p_.cross_attention() ? "X_source" : "X");
            column(mla.W_DKV, "W_DKV");
        } else if (name == "c_q" || (name == "q" && !mla.W_DQ)) {
            left.assign(p_.X[b].row(i_), p_.X[b].row(i_) + p_.d_model);
            left_name = "row " + index(i_) + " of X";
            column(name == "c_q" ? *mla.W_DQ : *p_.W_Q, name == "c_q" ? "W_DQ" : "W_Q");
        } else if (name == "q") {
            left = row_of("c_q", i_, 0, mla.d_cq);
            left_name = "row " + index(i_) + " of c_q";
            column(*mla.W_UQ, "W_UQ");
        } else if (name == "k" || name == "v") {
            left = row_of("c_kv", i_, 0, mla.d_c);
            left_name = "row " + index(i_) + " of c_kv";
            column(name == "k" ? mla.W_UK : mla.W_UV, name == "k" ? "W_UK" : "W_UV");
        } else {  // q_latent: q_h · row c of W_UK's head-h columns
            const std::size_t first = static_cast<std::size_t>(options_.head) * mla.d_content;
            left = row_of("q", i_, first, mla.d_content);
            left_name = fmt::format("row {} of q, head {}'s columns", i_, options_.head);
            for (std::size_t t = 0; t < mla.d_content; ++t) right.push_back(mla.W_UK(c, first + t));
            right_name = fmt::format("row {} of W_UK, head {}'s columns", c, options_.head);
        }
        const bool biased = name == "q" && !mla.W_DQ && p_.b_Q;
        ExplainDocument d;
        d.heading = heading(step(name).formula);
        d.lines.push_back({left_name, n_.vector(left)});
        d.lines.push_back({right_name, n_.vector(right)});
        std::vector<std::string> products, terms;
        for (std::size_t t = 0; t < left.size(); ++t) {
            products.push_back(n_.factor(left[t]) + n_.times() + n_.factor(right[t]));
            terms.push_back(n_.factor(left[t] * right[t]));
        }
        if (biased) {
            products.push_back(n_.factor((*p_.b_Q)[c]));
            terms.push_back(n_.factor((*p_.b_Q)[c]));
        }
        d.lines.push_back({biased ? "multiply the pairs and add, then the bias b_Q[" + index(c) + "]" : "multiply the pairs and add",
                           n_.chain({n_.sub(name, index(i_, c)), n_.terms(products, " + ", 3), n_.terms(terms, " + ", 6), n_.number(at(name, i_, c))})});
        return finish(d);
    }

    // (x_a, x_b) turned by position · θ_p: the pair that holds column c.
    ExplainDocument rope_cell() {
        const bool query = target_.step == "q_rot";
        const std::size_t c = j(), d_k = p_.d_k, pairs = d_k / 2;
        const Rope& rope = *p_.rope;
        const bool interleaved = rope.style == Rope::Style::interleaved;
        const std::size_t pair = interleaved ? c / 2 : c % pairs;
        const auto [a, b] = rope_pair(rope, pair, d_k);
        const int column_head = query ? options_.head : kv_head_of(p_, options_.head);
        const auto x = row_of(query ? "q" : "k", i_, static_cast<std::size_t>(column_head) * d_k, d_k);
        const double position = (query ? query_positions(p_) : key_positions(p_))[i_];
        const double theta = rope_theta(rope, pair, d_k);
        const double angle = position * theta;
        const double cosine = round_to(f32() ? Dtype::f32 : Dtype::f64, std::cos(angle)), sine = round_to(f32() ? Dtype::f32 : Dtype::f64, std::sin(angle));
        ExplainDocument d;
        d.heading = heading(fmt::format("RoPE turns the pair ({}, {}) of {} row {} by its position", a, b, query ? "query" : "key", i_));
        d.lines.push_back({fmt::format("{} pairs: column {} is paired with column {}", interleaved ? "interleaved" : "half", c, c == a ? b : a),
                           fmt::format("({}, {}) = ({}, {})", n_.sub("x", index(a)), n_.sub("x", index(b)), n_.number(x[a]), n_.number(x[b]))});
        const std::string theta_text = rope.angles_deg.empty() ? fmt::format("θ_{} = base^(-2·{}/d_k) = {}^(-{}/{})", pair, pair, rope.base, 2 * pair, d_k)
                                                               : fmt::format("θ_{} = {} degrees", pair, rope.angles_deg[pair]);
        d.lines.push_back({fmt::format("the angle: position {} times {}", position, theta_text),
                           fmt::format("{} = {}{}{} = {},  cos = {},  sin = {}", n_.latex() ? "\\varphi" : "φ", n_.number(position), n_.times(), n_.number(theta),
                                       n_.number(angle), n_.number(cosine), n_.number(sine))});
        const bool first = c == a;
        const std::string formula = first ? fmt::format("{}{}cos - {}{}sin", n_.sub("x", index(a)), n_.dot(), n_.sub("x", index(b)), n_.dot())
                                          : fmt::format("{}{}sin + {}{}cos", n_.sub("x", index(a)), n_.dot(), n_.sub("x", index(b)), n_.dot());
        const std::string numbers = first ? fmt::format("{}{}{} - {}{}{}", n_.factor(x[a]), n_.times(), n_.factor(cosine), n_.factor(x[b]), n_.times(), n_.factor(sine))
                                          : fmt::format("{}{}{} + {}{}{}", n_.factor(x[a]), n_.times(), n_.factor(sine), n_.factor(x[b]), n_.times(), n_.factor(cosine));
        const std::string products = first ? fmt::format("{} - {}", n_.number(x[a] * cosine), n_.factor(x[b] * sine))
                                           : fmt::format("{} + {}", n_.number(x[a] * sine), n_.factor(x[b] * cosine));
        d.lines.push_back({"the two products of the rotation",
                           n_.terms({n_.sub(query ? "q'" : "k'", index(i_, c)), formula, numbers, products, n_.number(at(target_.step, i_, c))}, " = ", 3)});
        return finish(d);
    }

    // S_ij = q_i · k_j, then s · S_ij, (the soft cap), and the mask: the whole chain
    // for any of its steps (scores, scaled, capped, masked), as the first explain did for scores.
    ExplainDocument score_cell() {
        const std::size_t i = i_, j = this->j();
        const int g = kv_head_of(p_, options_.head);
        const auto q = head_row("q", i, options_.head, p_.d_k), k = head_row("k", j, g, p_.d_k);
        ExplainDocument d;
        d.heading = fmt::format("{}[{},{}], {}: query {}{} · key {}{}", target_.step, i, j, where(), i, quoted_label(query_labels(p_), i), j,
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
                           n_.chain({n_.sub("S", index(i, j)), n_.sub("q", index(i)) + n_.dot() + n_.sub("k", index(j)), n_.terms(products, " + ", 3),
                                     n_.terms(terms, " + ", 6), n_.number(score)})});
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
        return finish(d);
    }

    // M_ij: every rule of the problem, one by one, and what it says about this cell.
    ExplainDocument mask_cell() {
        const std::size_t i = i_, j = this->j();
        const long offset = static_cast<long>(p_.m) - static_cast<long>(p_.n);
        ExplainDocument d;
        d.heading = heading(fmt::format("may query {} read key {}?", i, j));
        for (const MaskSpec& spec : p_.masks) {
            // The rule on its own, through the same code that built M.
            const double alone = build_mask_rows({spec}, p_.n, p_.m, p_.m, 0.0, i, 1)(0, j);
            d.lines.push_back({mask_rule(spec, i, j, offset, alone), ""});
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
        const double value = at("mask", i, j);
        d.lines.push_back({std::isinf(value) ? "a rule hides the key, so M is -inf (a hidden key wins over every bias)"
                                             : value == 0 ? "no rule hides the key and nothing biases it" : "no rule hides the key; the biases add up",
                           n_.sub("M", index(i, j)) + " = " + n_.number(value)});
        return finish(d);
    }

    std::string mask_rule(const MaskSpec& spec, std::size_t i, std::size_t j, long offset, double alone) const {
        const std::string verdict = std::isinf(alone) ? "hidden (-inf)" : "visible (0)";
        switch (spec.kind) {
            case MaskSpec::Kind::none: return "none: every key is visible";
            case MaskSpec::Kind::causal_upper_left:
                return fmt::format("{} (top-left aligned): query {} reads keys j <= {}, so key {} is {}", spec.label, i, i, j, verdict);
            case MaskSpec::Kind::causal_bottom_right:
                return fmt::format("{} (bottom-right aligned, m - n = {}): query {} reads keys j <= {} + {} = {}, so key {} is {}", spec.label, offset, i, i,
                                   offset, static_cast<long>(i) + offset, j, verdict);
            case MaskSpec::Kind::window:
                return fmt::format("{}: query {} (position {}) reads keys {} to {}, so key {} is {}", spec.label, i, static_cast<long>(i) + offset,
                                   static_cast<long>(i) + offset - spec.window_left, static_cast<long>(i) + offset + spec.window_right, j, verdict);
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

    std::string z_row_terms(std::size_t i, std::size_t per_line) const {
        return n_.terms(elided(p_.m, [&](std::size_t l) { return n_.number(at("masked", i, l)); }), ", ", per_line);
    }

    // row_max_i = max_j z_ij
    ExplainDocument row_max_cell() {
        ExplainDocument d;
        d.heading = heading(fmt::format("the largest masked score of row {}", i_));
        const double max = at("row_max", i_, 0);
        std::size_t where_max = 0;
        while (where_max + 1 < p_.m && at("masked", i_, where_max) != max) ++where_max;
        d.lines.push_back({fmt::format("the masked row {} (scaled scores + mask)", i_), n_.sub("z", index(i_)) + " = (" + z_row_terms(i_, 8) + ")"});
        d.lines.push_back({std::isinf(max) ? "every key is masked: the max is -inf (an empty row)" : fmt::format("its largest value, at key {}", where_max),
                           n_.max_of(index(i_)) + " = " + n_.number(max)});
        return finish(d);
    }

    // exp_ij = e^(z_ij − max_i)
    ExplainDocument exp_cell() {
        const double z = at("masked", i_, j()), max = at("row_max", i_, 0);
        ExplainDocument d;
        d.heading = heading("the exponential of the shifted score");
        d.lines.push_back({"the masked score minus the row's max (so no exponential can overflow)",
                           fmt::format("{} = {} - {} = {}", n_.sub("z", index(i_, j())) + " - " + n_.max_of(index(i_)), n_.number(z), n_.factor(max), n_.number(z - max))});
        d.lines.push_back({std::isinf(z) ? "a masked key: e^(-inf) = 0" : "its exponential",
                           fmt::format("{} = {}", n_.exp(n_.number(z - max)), n_.number(at("exp", i_, j())))});
        return finish(d);
    }

    // row_sum_i = Σ_j exp_ij
    ExplainDocument row_sum_cell() {
        ExplainDocument d;
        d.heading = heading(fmt::format("the sum of row {}'s exponentials", i_));
        d.lines.push_back({"add the exponentials e^(z - max) of the row (masked keys give 0)",
                           fmt::format("{} = {} = {}", n_.total(index(i_)), n_.terms(elided(p_.m, [&](std::size_t l) { return n_.number(at("exp", i_, l)); }), " + ", 8),
                                       n_.number(at("row_sum", i_, 0)))});
        return finish(d);
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
        const std::size_t i = i_, j = this->j();
        ExplainDocument d;
        d.heading = fmt::format("weights[{},{}], {}: how much query {}{} reads key {}{}", i, j, where(), i, quoted_label(query_labels(p_), i), j,
                                quoted_label(key_labels(p_), j));
        const double z = at("masked", i, j), max = at("row_max", i, 0);
        if (std::isinf(max) && max < 0) return empty_row(std::move(d), i);
        const std::string A = n_.sub("A", index(i, j));
        if (std::isinf(z) && z < 0) {
            d.lines.push_back({fmt::format("key {} is masked for query {}: its score is -inf, and e^(-inf) = 0, so the weight is exactly 0", j, i),
                               fmt::format("{} = {} / {} = 0", A, n_.exp(n_.number(z)), n_.total(index(i)))});
            return finish(d);
        }
        d.lines.push_back({fmt::format("the masked score and the largest score of row {}", i),
                           fmt::format("{} = {},  {} = {}", n_.sub("z", index(i, j)), n_.number(z), n_.max_of(index(i)), n_.number(max))});
        const double sum = at("row_sum", i, 0);
        d.lines.push_back({"the sum of the row's exponentials e^(z - max) (masked keys give 0)",
                           fmt::format("{} = {} = {}", n_.total(index(i)), n_.terms(elided(p_.m, [&](std::size_t l) { return n_.number(at("exp", i, l)); }), " + ", 8),
                                       n_.number(sum))});
        d.lines.push_back({"the weight: this key's exponential over the sum",
                           softmax_quotient(A, n_.sub("z", index(i, j)), n_.max_of(index(i)), n_.total(index(i)), z, max, at("exp", i, j), sum, at("weights", i, j))});
        return finish(d);
    }

    // The whole softmax of row i: the masked row, its max, the shifted values,
    // each exponential, the sum, each quotient.
    ExplainDocument weight_row() {
        const std::size_t i = i_;
        ExplainDocument d;
        d.heading = fmt::format("weights[{}], {}: the softmax of row {}{}", i, where(), i, quoted_label(query_labels(p_), i));
        d.lines.push_back({"the masked row (scaled scores + mask; -inf = a key this query may not read)", n_.sub("z", index(i)) + " = (" + z_row_terms(i, 8) + ")"});
        const double max = at("row_max", i, 0);
        if (std::isinf(max) && max < 0) return empty_row(std::move(d), i);
        const std::string max_name = n_.max_of(index(i));
        d.lines.push_back({"its largest value", max_name + " = " + n_.number(max)});
        const double sum = at("row_sum", i, 0);
        const auto shifts = elided(p_.m, [&](std::size_t j) { return fmt::format("{} - {}", n_.number(at("masked", i, j)), n_.factor(max)); });
        const auto shifted = elided(p_.m, [&](std::size_t j) { return n_.number(at("masked", i, j) - max); });
        const auto exps = elided(p_.m, [&](std::size_t j) { return fmt::format("{} = {}", n_.exp(n_.number(at("masked", i, j) - max)), n_.number(at("exp", i, j))); });
        const auto exp_values = elided(p_.m, [&](std::size_t j) { return n_.number(at("exp", i, j)); });
        const auto quotients = elided(p_.m, [&](std::size_t j) {
            return fmt::format("{} = {} = {}", n_.sub("A", index(i, j)), n_.fraction(n_.number(at("exp", i, j)), n_.number(sum)), n_.number(at("weights", i, j)));
        });
        d.lines.push_back({"subtract it from every value (the weights do not change, and no exponential can overflow)",
                           n_.chain({n_.sub("z", index(i)) + " - " + max_name, "(" + n_.terms(shifts, ", ", 4) + ")", "(" + n_.terms(shifted, ", ", 8) + ")"})});
        d.lines.push_back({"each exponential (e^(-inf) = 0: a masked key gets nothing)", n_.terms(exps, ",  ", 3)});
        d.lines.push_back({"their sum", fmt::format("{} = {} = {}", n_.total(index(i)), n_.terms(exp_values, " + ", 8), n_.number(sum))});
        d.lines.push_back({"each weight: its exponential over the sum", n_.terms(quotients, ",  ", 3)});
        double weight_total = 0;
        for (std::size_t j = 0; j < p_.m; ++j) weight_total += at("weights", i, j);
        d.lines.push_back({"the weights of the row add up to 1", fmt::format("{} {} = {}", n_.sum_symbol(), n_.sub("A", index(i) + "j"), n_.number(weight_total))});
        return finish(d);
    }

    // o_ic = Σ_j A_ij v_jc, every term.
    ExplainDocument output_cell() {
        const std::size_t i = i_, c = j();
        const int g = kv_head_of(p_, options_.head);
        ExplainDocument d;
        d.heading = heading(fmt::format("component {} of query {}'s output, a weighted sum of the values", c, i));
        const std::string a = mixer();
        const auto products = elided(p_.m, [&](std::size_t l) { return n_.number(at(a, i, l)) + n_.times() + n_.factor(head_row("v", l, g, p_.d_v)[c]); });
        const auto terms = elided(p_.m, [&](std::size_t l) { return n_.factor(at(a, i, l) * head_row("v", l, g, p_.d_v)[c]); });
        d.lines.push_back({fmt::format("each key's weight times component {} of its value row{}", c, p_.kv_heads < p_.heads ? fmt::format(" (KV head {})", g) : ""),
                           n_.chain({n_.sub("o", index(i, c)), n_.sub(n_.sum_symbol(), "j") + " " + n_.sub("A", index(i) + "j") + " " + n_.sub("v", "j" + index(c)),
                                     n_.terms(products, " + ", 3), n_.terms(terms, " + ", 6), n_.number(at("out", i, c))})});
        return finish(d);
    }

    // o_i = Σ_j A_ij v_j, every term.
    ExplainDocument output_row() {
        const std::size_t i = i_;
        const int g = kv_head_of(p_, options_.head);
        ExplainDocument d;
        d.heading = fmt::format("out[{}], {}: the output of query {}{}, a weighted sum of the value rows", i, where(), i, quoted_label(query_labels(p_), i));
        std::vector<double> weights(p_.m);
        for (std::size_t j = 0; j < p_.m; ++j) weights[j] = at(mixer(), i, j);
        d.lines.push_back({fmt::format("the weights of row {} ({})", i, mixer() == "dropped" ? "after dropout" : "from the softmax"),
                           n_.sub("A", index(i)) + " = (" + n_.terms(elided(p_.m, [&](std::size_t j) { return n_.number(weights[j]); }), ", ", 8) + ")"});
        const auto shown = elided(p_.m, [](std::size_t j) { return std::to_string(j); });
        for (const auto& key : shown) {
            if (key == n_.ellipsis()) {
                d.lines.push_back({fmt::format("… and so on for keys 12 to {}", p_.m - 5), ""});
                continue;
            }
            const std::size_t j = std::stoul(key);
            const auto v = head_row("v", j, g, p_.d_v);
            std::vector<double> term(p_.d_v);
            for (std::size_t c = 0; c < p_.d_v; ++c) term[c] = weights[j] * v[c];
            d.lines.push_back({fmt::format("key {}{}: weight times value row {}{}", j, quoted_label(key_labels(p_), j), j,
                                           weights[j] == 0 ? " (weight 0: this key adds nothing)" : ""),
                               p_.d_v > 2 ? n_.terms({n_.sub("A", index(i, j)) + " " + n_.sub("v", index(j)) + " = " + n_.number(weights[j]) + n_.times() + n_.vector(v), n_.vector(term)}, " = ", 1)
                                          : n_.chain({n_.sub("A", index(i, j)) + " " + n_.sub("v", index(j)), n_.number(weights[j]) + n_.times() + n_.vector(v), n_.vector(term)})});
        }
        std::vector<std::string> components;
        for (std::size_t c = 0; c < p_.d_v; ++c)
            components.push_back(n_.terms(elided(p_.m, [&](std::size_t j) { return n_.factor(weights[j] * head_row("v", j, g, p_.d_v)[c]); }), " + ", 6));
        d.lines.push_back({"add the terms, component by component",
                           n_.chain({n_.sub("o", index(i)), n_.sub(n_.sum_symbol(), "j") + " " + n_.sub("A", index(i) + "j") + " " + n_.sub("v", "j"),
                                     "(" + n_.terms(components, ", ", 1) + ")", n_.vector(row_of("out", i, 0, p_.d_v))})});
        return finish(d);
    }

    // concat[i, c] = out of head c / d_v, column c mod d_v.
    ExplainDocument concat_cell() {
        const std::size_t c = j(), h = c / p_.d_v, column = c % p_.d_v;
        ExplainDocument d;
        d.heading = heading(fmt::format("column {} of [O_0 … O_{}] is head {}'s output column {}", c, p_.heads - 1, h, column));
        d.lines.push_back({fmt::format("the heads' outputs side by side, {} columns each: {} = {} · {} + {}", p_.d_v, c, h, p_.d_v, column),
                           fmt::format("{} = {} = {}", n_.sub("concat", index(i_, c)), n_.sub("O", n_.latex() ? "{" + std::to_string(h) + "," + index(i_, column) + "}" : std::to_string(h) + "[" + index(i_) + "," + std::to_string(column) + "]"),
                                       n_.number(at("out", i_, column, static_cast<int>(h))))});
        return finish(d);
    }

    // final[i, c] = concat_i · W_O[:, c] + b_O[c]
    ExplainDocument final_cell() {
        const std::size_t c = j();
        const auto concat = row_of("concat", i_, 0, static_cast<std::size_t>(p_.heads) * p_.d_v);
        ExplainDocument d;
        d.heading = heading("the output projection: the concatenated row times a column of W_O");
        std::vector<double> column(p_.W_O->rows());
        for (std::size_t t = 0; t < column.size(); ++t) column[t] = (*p_.W_O)(t, c);
        d.lines.push_back({fmt::format("row {} of concat", i_), n_.sub("concat", index(i_)) + " = " + n_.vector(concat)});
        d.lines.push_back({fmt::format("column {} of W_O", c), column_of("W_O", c) + " = " + n_.vector(column)});
        std::vector<std::string> products, terms;
        for (std::size_t t = 0; t < column.size(); ++t) {
            products.push_back(n_.factor(concat[t]) + n_.times() + n_.factor(column[t]));
            terms.push_back(n_.factor(concat[t] * column[t]));
        }
        if (p_.b_O) {
            products.push_back(n_.factor((*p_.b_O)[c]));
            terms.push_back(n_.factor((*p_.b_O)[c]));
        }
        d.lines.push_back({fmt::format("multiply the pairs and add{}", p_.b_O ? fmt::format(", then the bias b_O[{}]", c) : ""),
                           n_.chain({n_.sub("final", index(i_, c)), n_.terms(products, " + ", 3), n_.terms(terms, " + ", 6), n_.number(at("final", i_, c))})});
        return finish(d);
    }

    std::size_t first_row_;
};

}  // namespace

ExplainDocument explain_run_step(const Trace& trace, const Problem& problem, const ExplainTarget& target, const ExplainOptions& options,
                                 std::size_t first_row) {
    return RunExplainer(trace, problem, target, options, first_row).explain();
}

}  // namespace attn_trace
