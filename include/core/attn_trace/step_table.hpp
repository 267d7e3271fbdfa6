#pragma once
// The step table (docs/NOTATION.md#the-steps): every step a trace can hold, once,
// in trace order: its name, what it holds in the plain case (run's formula when there
// is no RoPE, softcap, MLA or grouping; a step's own formula, as recorded, says more),
// its shape, and the commands that produce it. Code names a step by StepName and
// switches on it, so that -Wswitch names every place a new step must reach; its text
// is read only where people type it (--steps, `expect`, explain's targets) and written
// only where people read it.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace attn_trace {

// The commands whose traces hold a step (docs/COMMANDS.md).
enum StepCommands : unsigned { by_run = 1, by_decode = 2, by_tiled = 4, by_grad = 8, by_permute = 16 };

// X(name, symbol, symbol in LaTeX, formula, shape, commands): docs/NOTATION.md holds the
// same rows. The symbol is what formulas, headers and explanations call the step (one
// letter, a subscript for a variant; d for a gradient, ij for a tile); the formula says
// what it holds in the plain case, in symbols. Shapes: n queries, m keys, H heads (H_kv
// key/value heads), d_k, d_v, d_model, MLA's d_c, d_cq, d_r; decode's step t; tiled's
// Br × Bc tile.
#define ATTN_TRACE_STEPS(X)                                                                          \
    X(x, "X", "X", "the input, one row per token", "n × d_model", by_run)                                                         \
    X(x_source, "X_source", "X_{\\text{source}}", "the source the keys and values read (cross-attention)", "m × d_model", by_run) \
    X(c_kv, "C_KV", "C_{KV}", "X_source W_DKV (MLA's latent)", "m × d_c", by_run)                                                 \
    X(c_q, "C_Q", "C_{Q}", "X W_DQ (MLA's compressed query)", "n × d_cq", by_run)                                                 \
    X(c_kv_normed, "C_KV,n", "C_{KV,n}", "RMSNorm(C_KV) · w (DeepSeek-V3's kv_a_layernorm)", "m × d_c", by_run)                     \
    X(c_q_normed, "C_Q,n", "C_{Q,n}", "RMSNorm(C_Q) · w (DeepSeek-V3's q_a_layernorm)", "n × d_cq", by_run)                          \
    X(q, "Q", "Q", "X W_Q (+ b_Q), or Q given", "n × H·d_k", by_run)                                                              \
    X(k, "K", "K", "X_source W_K (+ b_K), or K given", "m × H_kv·d_k", by_run)                                                    \
    X(v, "V", "V", "X_source W_V (+ b_V), or V given", "m × H_kv·d_v", by_run)                                                    \
    X(q_normed, "Q_n", "Q_{n}", "RMSNorm(Q) · w, per head or over all of Q (qk-norm)", "n × H·d_k", by_run)                        \
    X(k_normed, "K_n", "K_{n}", "RMSNorm(K) · w, per head or over all of K (qk-norm)", "m × H_kv·d_k", by_run)                     \
    X(q_rope, "Q_R", "Q_{R}", "RoPE(X W_QR), per head (MLA)", "n × H·d_r", by_run)                                                \
    X(k_rope, "K_R", "K_{R}", "RoPE(X_source W_KR), one for every head (MLA)", "m × d_r", by_run)                                 \
    X(q_rot, "Q_rot", "Q_{\\text{rot}}", "RoPE(Q)", "n × d_k", by_run)                                                            \
    X(k_rot, "K_rot", "K_{\\text{rot}}", "RoPE(K)", "m × d_k", by_run)                                                            \
    X(q_latent, "Q_C", "Q_{C}", "Q_h W_UK,hᵀ (MLA's absorbed form)", "n × d_c", by_run)                                           \
    X(scores, "S", "S", "Q Kᵀ", "n × m", by_run)                                                                                  \
    X(scaled, "S_s", "S_{s}", "s · S", "n × m", by_run)                                                                           \
    X(capped, "S_c", "S_{c}", "c · tanh(S_s / c)", "n × m", by_run)                                                               \
    X(mask, "M", "M", "0 where a query may read a key, −∞ where it may not", "n × m", by_run)                                     \
    X(reach, "R", "R", "the least number of stacked layers through which key j reaches query i (inf: never)", "n × m", by_run)   \
    X(masked, "Z", "Z", "S_s + M (S_c + M with a softcap; without a mask, Z = S_s)", "n × m", by_run | by_decode | by_tiled)      \
    X(row_max, "m", "m", "rowmax(Z)", "n × 1", by_run)                                                                           \
    X(exp, "E", "E", "exp(Z − m)", "n × m", by_run)                                                                               \
    X(row_sum, "ℓ", "\\ell", "rowsum(E)", "n × 1", by_run)                                                                         \
    X(weights, "A", "A", "E / ℓ = softmax(Z)", "n × m", by_run | by_decode)                                                       \
    X(keep, "B", "B", "1 where dropout keeps a weight, 0 where it drops it", "n × m", by_run)                                     \
    X(dropped, "A_d", "A_{d}", "A ⊙ B / (1 − p)", "n × m", by_run)                                                                \
    X(out, "O", "O", "A V", "n × d_v", by_run | by_decode | by_tiled | by_permute)                                                \
    X(concat, "O_cat", "O_{\\text{cat}}", "[O_0 … O_(H−1)]", "n × H·d_v", by_run | by_decode | by_tiled)                          \
    X(final, "Y", "Y", "O_cat W_O (+ b_O)", "n × d_model", by_run | by_decode | by_tiled)                                         \
    X(out_of_permuted, "O(PX)", "O(PX)", "the output of the problem with its tokens permuted", "n × d_v", by_permute)             \
    X(permuted_out, "P O", "P O", "the original output, its rows permuted", "n × d_v", by_permute)                                \
    X(k_cache, "K_cache", "K_{\\text{cache}}", "K[0…t] after appending k_t", "(t + 1) × d_k", by_decode)                          \
    X(v_cache, "V_cache", "V_{\\text{cache}}", "V[0…t] after appending v_t", "(t + 1) × d_v", by_decode)                          \
    X(c_cache, "C_cache", "C_{\\text{cache}}", "C_KV[0…t] after appending c_kv,t (MLA)", "(t + 1) × d_c", by_decode)              \
    X(kr_cache, "K_R,cache", "K_{R,\\text{cache}}", "K_R[0…t] after appending k_rope,t (MLA)", "(t + 1) × d_r", by_decode)        \
    X(m, "m", "m", "max(m_old, rowmax(Z_ij)): row_max's running form, after a tile", "Br × 1", by_tiled)                            \
    X(l, "ℓ", "\\ell", "α ℓ_old + rowsum(exp(Z_ij − m)): row_sum's running form, after a tile", "Br × 1", by_tiled)                   \
    X(u, "u", "u", "α u_old + exp(Z_ij − m) V_j: the running unnormalised output, after a tile", "Br × d_v", by_tiled)            \
    X(rescale, "α", "\\alpha", "exp(m_old − m)", "Br × 1", by_tiled)                                                              \
    X(grad_final, "dY", "\\mathrm{d}Y", "∂L/∂Y (the given d_out)", "n × d_model", by_grad)                                        \
    X(grad_concat, "dO_cat", "\\mathrm{d}O_{\\text{cat}}", "dY W_Oᵀ, or the given d_out", "n × H·d_v", by_grad)                   \
    X(grad_W_O, "dW_O", "\\mathrm{d}W_{O}", "O_catᵀ dY", "H·d_v × d_model", by_grad)                                              \
    X(grad_b_O, "db_O", "\\mathrm{d}b_{O}", "Σ_i dY_i", "1 × d_model", by_grad)                                                   \
    X(grad_out, "dO", "\\mathrm{d}O", "dO_cat's columns of one head", "n × d_v", by_grad)                                         \
    X(grad_v, "dV", "\\mathrm{d}V", "Aᵀ dO", "m × d_v", by_grad)                                                                  \
    X(grad_dropped, "dA_d", "\\mathrm{d}A_{d}", "dO Vᵀ (train mode)", "n × m", by_grad)                                           \
    X(grad_weights, "dA", "\\mathrm{d}A", "dO Vᵀ (dA_d ⊙ B / (1 − p) in train mode)", "n × m", by_grad)                           \
    X(grad_masked, "dZ", "\\mathrm{d}Z", "A ⊙ (dA − rowsum(dA ⊙ A))", "n × m", by_grad)                                           \
    X(grad_capped, "dS_c", "\\mathrm{d}S_{c}", "dZ (the mask adds a constant)", "n × m", by_grad)                                 \
    X(grad_scaled, "dS_s", "\\mathrm{d}S_{s}", "dZ (dS_c ⊙ (1 − tanh²(S_s / c)) with a softcap)", "n × m", by_grad)               \
    X(grad_scores, "dS", "\\mathrm{d}S", "s · dS_s", "n × m", by_grad)                                                            \
    X(grad_q_rot, "dQ_rot", "\\mathrm{d}Q_{\\text{rot}}", "dS K_rot", "n × d_k", by_grad)                                         \
    X(grad_k_rot, "dK_rot", "\\mathrm{d}K_{\\text{rot}}", "dSᵀ Q_rot", "m × d_k", by_grad)                                        \
    X(grad_q, "dQ", "\\mathrm{d}Q", "dS K", "n × d_k", by_grad)                                                                   \
    X(grad_k, "dK", "\\mathrm{d}K", "dSᵀ Q", "m × d_k", by_grad)                                                                  \
    X(grad_W_Q, "dW_Q", "\\mathrm{d}W_{Q}", "Xᵀ dQ", "d_model × H·d_k", by_grad)                                                  \
    X(grad_W_K, "dW_K", "\\mathrm{d}W_{K}", "X_sourceᵀ dK", "d_model × H_kv·d_k", by_grad)                                        \
    X(grad_W_V, "dW_V", "\\mathrm{d}W_{V}", "X_sourceᵀ dV", "d_model × H_kv·d_v", by_grad)                                        \
    X(grad_b_Q, "db_Q", "\\mathrm{d}b_{Q}", "Σ_i dQ_i", "1 × H·d_k", by_grad)                                                     \
    X(grad_b_K, "db_K", "\\mathrm{d}b_{K}", "Σ_j dK_j", "1 × H_kv·d_k", by_grad)                                                  \
    X(grad_b_V, "db_V", "\\mathrm{d}b_{V}", "Σ_j dV_j", "1 × H_kv·d_v", by_grad)                                                  \
    X(grad_x, "dX", "\\mathrm{d}X", "dQ W_Qᵀ + dK W_Kᵀ + dV W_Vᵀ", "n × d_model", by_grad)                                        \
    X(grad_x_source, "dX_source", "\\mathrm{d}X_{\\text{source}}", "dK W_Kᵀ + dV W_Vᵀ", "m × d_model", by_grad)                   \
    X(jacobian, "J", "J", "diag(a_i) − a_i a_iᵀ, softmax's Jacobian at row i of A", "m × m", by_grad)                             \
    X(lse, "lse", "\\mathrm{lse}", "m + ln ℓ, kept from the forward pass", "n × 1", by_grad)                                      \
    X(delta, "δ", "\\delta", "rowsum(dO ⊙ O)", "n × 1", by_grad)                                                                  \
    X(p, "A_ij", "A_{ij}", "exp(Z_ij − lse): weights' tile form, recomputed", "Br × Bc", by_grad)                                 \
    X(grad_p, "dA_ij", "\\mathrm{d}A_{ij}", "dO V_jᵀ: grad_weights' tile form", "Br × Bc", by_grad)                               \
    X(grad_s, "dZ_ij", "\\mathrm{d}Z_{ij}", "A_ij ⊙ (dA_ij − δ): grad_masked's tile form", "Br × Bc", by_grad)                    \
    X(given, "", "", "a matrix the problem file gives (exercise's Q, W_Q, …), named by its label", "as given", 0)

enum class StepName : std::uint8_t {
#define ATTN_TRACE_STEP_ID(name, symbol, latex, formula, shape, commands) name,
    ATTN_TRACE_STEPS(ATTN_TRACE_STEP_ID)
#undef ATTN_TRACE_STEP_ID
};

struct StepInfo {
    StepName id;
    std::string name;  // as people type and read it
    std::string_view symbol, latex;  // as formulas write it, in text and in LaTeX
    std::string_view formula, shape;
    unsigned commands;  // StepCommands bits
};

// The table, in trace order (the order --steps, `expect` and explain list names in).
const std::vector<StepInfo>& step_table();
const StepInfo& step_info(StepName step);
inline const std::string& step_name(StepName step) { return step_info(step).name; }
inline std::string_view step_symbol(StepName step) { return step_info(step).symbol; }
inline std::string_view step_symbol_latex(StepName step) { return step_info(step).latex; }
// A step's heading as every format writes it (docs/NOTATION.md#headings): "A = E / ℓ";
// a formula that is a remark in parentheses follows the symbol ("Q (given)"); with no
// symbol (a given, named by its label) or no formula, the other alone.
std::string defined_as(std::string_view symbol, std::string_view formula);
// The one lookup of a step by its text: nullopt for a name that is no step. `given`,
// which no command produces, is not looked up and not listed.
std::optional<StepName> find_step(std::string_view name);
// Every step name, in trace order: for "expected one of ..." messages and completion.
const std::vector<std::string>& step_names();

// The backward pass's steps (grad's, docs/COMMANDS.md#grad): explain and check read a
// target from the grad trace when it names one.
bool is_grad_step(StepName step);
// A gradient of L (grad_…): the steps of grad's trace but jacobian, lse, delta and p.
bool is_gradient(StepName step);

// A stream writes a StepName as its name too (test frameworks print values this way).
std::ostream& operator<<(std::ostream& out, StepName step);

}  // namespace attn_trace

// fmt writes a StepName as its name, so messages and headings need no lookup.
template <>
struct fmt::formatter<attn_trace::StepName> : fmt::formatter<std::string_view> {
    template <typename Context>
    auto format(attn_trace::StepName step, Context& ctx) const {
        return fmt::formatter<std::string_view>::format(std::string_view(attn_trace::step_name(step)), ctx);
    }
};
