// The projections' cells: q, k, v as a row of X times a column of W (plus the bias), MLA's
// products through its latent, and q_rot/k_rot as RoPE's turn of one pair of columns.
#include <cmath>

#include <fmt/format.h>

#include "attn_trace/attention_parts.hpp"
#include "explain_run_explainer.hpp"

namespace attn_trace {

// q_ic = x_i · W_Q[:, c] + b_c (k and v read X_source in cross-attention).
ExplainDocument RunExplainer::projection_cell() {
    const StepName name = target_.step;
    const bool query = name == StepName::q;
    const Matrix& W = name == StepName::q ? *p_.W_Q : name == StepName::k ? *p_.W_K : *p_.W_V;
    const auto& bias = name == StepName::q ? p_.b_Q : name == StepName::k ? p_.b_K : p_.b_V;
    const Matrix& x = query || !p_.cross_attention() ? p_.X[static_cast<std::size_t>(options_.batch)] : p_.X_source[static_cast<std::size_t>(options_.batch)];
    const std::size_t width = name == StepName::v ? p_.d_v : p_.d_k, c = j();
    const std::string big = name == StepName::q ? "Q" : name == StepName::k ? "K" : "V";
    ExplainDocument d;
    d.heading = heading(fmt::format("column {} of {} is column {} of {} head {}", c, big, c % width, query ? "query" : "KV", c / width));
    const std::vector<double> input(x.row(i_), x.row(i_) + x.cols()), column = column_values(W, c);
    const std::string x_name = query || !p_.cross_attention() ? "x" : "x^{src}";
    d.lines.push_back({fmt::format("row {} of {}{}", i_, query || !p_.cross_attention() ? "X" : "X_source", quoted_label(query ? query_labels(p_) : key_labels(p_), i_)),
                       n_.sub(n_.latex() ? x_name : (query || !p_.cross_attention() ? "x" : "xsrc"), index(i_)) + " = " + n_.vector(input)});
    d.lines.push_back({fmt::format("column {} of W_{}", c, big), column_of("W_" + big, c) + " = " + n_.vector(column)});
    const std::optional<double> b = bias ? std::optional<double>((*bias)[c]) : std::nullopt;
    d.lines.push_back(product_line(input, column, "b_" + big, b));
    close_with_rounding(d, [&] { return f32_dot(input, column, b); });
    return finish(d);
}

// MLA's products (docs/FAMILY.md#mla-multi-head-latent-attention-deepseek-v2): c_kv =
// X_src W_DKV, c_q = X W_DQ, q = c_q W_UQ (or X W_Q + b_Q), k = c_kv W_UK, v = c_kv
// W_UV, q_latent = q_h W_UK,hᵀ: a row of the left times a column of the right.
ExplainDocument RunExplainer::mla_product_cell() {
    const StepName name = target_.step;
    const Mla& mla = *p_.mla;
    const std::size_t b = static_cast<std::size_t>(options_.batch), c = j();
    const Matrix& source = p_.cross_attention() ? p_.X_source[b] : p_.X[b];
    std::vector<double> left, right;
    std::string left_name, right_name;
    const auto column = [&](const Matrix& w, const std::string& label) {
        right = column_values(w, c);
        right_name = label + "[:," + index(c) + "]";
    };
    if (name == StepName::c_kv) {
        left.assign(source.row(i_), source.row(i_) + source.cols());
        left_name = "row " + index(i_) + " of " + (p_.cross_attention() ? "X_source" : "X");
        column(mla.W_DKV, "W_DKV");
    } else if (name == StepName::c_q || (name == StepName::q && !mla.W_DQ)) {
        left.assign(p_.X[b].row(i_), p_.X[b].row(i_) + p_.d_model);
        left_name = "row " + index(i_) + " of X";
        column(name == StepName::c_q ? *mla.W_DQ : *p_.W_Q, name == StepName::c_q ? "W_DQ" : "W_Q");
    } else if (name == StepName::q) {
        left = row_of(mla.c_q_norm ? StepName::c_q_normed : StepName::c_q, i_, 0, mla.d_cq);  // the normed latent where there is one
        left_name = "row " + index(i_) + (mla.c_q_norm ? " of c_q_normed" : " of c_q");
        column(*mla.W_UQ, "W_UQ");
    } else if (name == StepName::k || name == StepName::v) {
        left = row_of(mla.c_kv_norm ? StepName::c_kv_normed : StepName::c_kv, i_, 0, mla.d_c);
        left_name = "row " + index(i_) + (mla.c_kv_norm ? " of c_kv_normed" : " of c_kv");
        column(name == StepName::k ? mla.W_UK : mla.W_UV, name == StepName::k ? "W_UK" : "W_UV");
    } else {  // q_latent: q_h · row c of W_UK's head-h columns
        const std::size_t first = static_cast<std::size_t>(options_.head) * mla.d_content;
        left = row_of(StepName::q, i_, first, mla.d_content);
        left_name = fmt::format("row {} of q, head {}'s columns", i_, options_.head);
        for (std::size_t t = 0; t < mla.d_content; ++t) right.push_back(mla.W_UK(c, first + t));
        right_name = fmt::format("row {} of W_UK, head {}'s columns", c, options_.head);
    }
    const bool biased = name == StepName::q && !mla.W_DQ && p_.b_Q;
    const std::optional<double> bias = biased ? std::optional<double>((*p_.b_Q)[c]) : std::nullopt;
    ExplainDocument d;
    d.heading = heading(step(name).formula);
    d.lines.push_back({left_name, n_.vector(left)});
    d.lines.push_back({right_name, n_.vector(right)});
    d.lines.push_back(product_line(left, right, "b_Q", bias));
    close_with_rounding(d, [&] { return f32_dot(left, right, bias); });
    return finish(d);
}

// (x_a, x_b) turned by position · θ_p: the pair that holds column c.
ExplainDocument RunExplainer::rope_cell() {
    const bool query = target_.step == StepName::q_rot;
    const std::size_t c = j(), d_k = p_.d_k, turned = rotary_dims(*p_.rope, d_k), pairs = turned / 2;
    const Rope& rope = *p_.rope;
    const bool interleaved = rope.style == Rope::Style::interleaved;
    const int column_head = query ? options_.head : kv_head_of(p_, options_.head);
    // RoPE turns what qk-norm gave, where the problem has one.
    const StepName input = p_.qk_norm ? (query ? StepName::q_normed : StepName::k_normed) : (query ? StepName::q : StepName::k);
    const auto x = row_of(input, i_, static_cast<std::size_t>(column_head) * d_k, d_k);
    if (c >= turned) {  // partial rotary
        ExplainDocument d;
        d.heading = heading(fmt::format("column {} is past the {} rotary columns: RoPE leaves it as it is", c, turned));
        d.lines.push_back({fmt::format("{} row {}, column {}", step_symbol(input), i_, c), n_.terms({n_.sub(query ? "q'" : "k'", index(i_, c)), n_.number(x[c])}, " = ", 3)});
        return finish(d);
    }
    const std::size_t pair = interleaved ? c / 2 : c % pairs;
    const auto [a, b] = rope_pair(rope, pair, d_k);
    const double position = (query ? query_positions(p_) : key_positions(p_))[i_];
    const double theta = rope_theta(rope, pair, d_k);
    const double angle = position * theta;
    const double factor = rope.attention_factor;  // yarn's, on cos and sin alike; 1 otherwise
    const Dtype inner = compute_dtype(dtype());  // cos and sin stay f32 in a half type
    const double cosine = round_to(inner, std::cos(angle) * factor), sine = round_to(inner, std::sin(angle) * factor);
    ExplainDocument d;
    d.heading = heading(fmt::format("RoPE turns the pair ({}, {}) of {} row {} by its position", a, b, query ? "query" : "key", i_));
    d.lines.push_back({fmt::format("{} pairs: column {} is paired with column {}", interleaved ? "interleaved" : "half", c, c == a ? b : a),
                       fmt::format("({}, {}) = ({}, {})", n_.sub("x", index(a)), n_.sub("x", index(b)), n_.number(x[a]), n_.number(x[b]))});
    const bool scaled = rope.scaling.type != RopeScaling::Type::none;
    const std::string theta_text = !rope.angles_deg.empty() ? fmt::format("θ_{} = {} degrees", pair, rope.angles_deg[pair])
                                   : scaled ? fmt::format("θ_{} from base {} under {} scaling", pair, rope.base, rope_scaling_name(rope.scaling.type))
                                            : fmt::format("θ_{} = base^(-2·{}/{}) = {}^(-{}/{})", pair, pair, turned == d_k ? "d_k" : "r", rope.base, 2 * pair, turned);
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

}  // namespace attn_trace
