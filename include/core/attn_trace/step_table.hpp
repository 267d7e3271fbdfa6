#pragma once
// The step table (docs/COMMANDS.md#the-step-table): every step a trace can hold, once,
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

// X(name, what it holds, shape, commands). Shapes: n queries, m keys, H heads (H_kv
// key/value heads), d_k, d_v, d_model, MLA's d_c, d_cq, d_r; decode's step t; tiled's
// Br × Bc tile.
#define ATTN_TRACE_STEPS(X)                                                                          \
    X(x, "X", "n × d_model", by_run)                                                                 \
    X(x_source, "X_source", "m × d_model", by_run)                                                   \
    X(c_kv, "X_source W_DKV (MLA's latent)", "m × d_c", by_run)                                      \
    X(c_q, "X W_DQ (MLA's compressed query)", "n × d_cq", by_run)                                   \
    X(q, "X W_Q (+ b_Q), or Q given", "n × H·d_k", by_run)                                          \
    X(k, "X_source W_K (+ b_K), or K given", "m × H_kv·d_k", by_run)                                \
    X(v, "X_source W_V (+ b_V), or V given", "m × H_kv·d_v", by_run)                                \
    X(q_rope, "RoPE(X W_QR), per head (MLA)", "n × H·d_r", by_run)                                  \
    X(k_rope, "RoPE(X_source W_KR), one for every head (MLA)", "m × d_r", by_run)                   \
    X(q_rot, "RoPE(q)", "n × d_k", by_run)                                                          \
    X(k_rot, "RoPE(k)", "m × d_k", by_run)                                                          \
    X(q_latent, "q_h W_UK,hᵀ (MLA's absorbed form)", "n × d_c", by_run)                             \
    X(scores, "Q Kᵀ (decode and tiled: s · Q Kᵀ + M)", "n × m", by_run | by_decode | by_tiled)      \
    X(scaled, "s · scores", "n × m", by_run)                                                        \
    X(capped, "c · tanh(scaled / c)", "n × m", by_run)                                              \
    X(mask, "M (0 = may read, -inf = may not)", "n × m", by_run)                                    \
    X(reach, "which keys a query reaches through the sparse pattern", "n × m", by_run)              \
    X(masked, "scaled + M", "n × m", by_run)                                                        \
    X(row_max, "max_j masked", "n × 1", by_run)                                                     \
    X(exp, "exp(masked − row_max)", "n × m", by_run)                                                \
    X(row_sum, "Σ_j exp", "n × 1", by_run)                                                          \
    X(weights, "A = exp / row_sum", "n × m", by_run | by_decode)                                    \
    X(keep, "1 where dropout keeps a weight, 0 where it drops it", "n × m", by_run)                 \
    X(dropped, "A ⊙ keep / (1 − p)", "n × m", by_run)                                               \
    X(out, "A V", "n × d_v", by_run | by_decode | by_tiled | by_permute)                           \
    X(concat, "[O_0 … O_(H−1)]", "n × H·d_v", by_run | by_decode | by_tiled)                       \
    X(final, "concat W_O (+ b_O)", "n × d_model", by_run | by_decode | by_tiled)                   \
    X(out_of_permuted, "the output of the permuted problem", "n × d_v", by_permute)                \
    X(permuted_out, "the original output, permuted", "n × d_v", by_permute)                         \
    X(k_cache, "K cache after appending k_t", "(t + 1) × d_k", by_decode)                           \
    X(v_cache, "V cache after appending v_t", "(t + 1) × d_v", by_decode)                           \
    X(c_cache, "latent cache after appending c_kv,t (MLA)", "(t + 1) × d_c", by_decode)             \
    X(kr_cache, "RoPE key cache after appending k_rope,t (MLA)", "(t + 1) × d_r", by_decode)        \
    X(m, "the running row max after a tile", "Br × 1", by_tiled)                                    \
    X(l, "the running row sum ℓ after a tile", "Br × 1", by_tiled)                                  \
    X(u, "the running unnormalised output after a tile", "Br × d_v", by_tiled)                      \
    X(rescale, "exp(m_old − m_new)", "Br × 1", by_tiled)                                            \
    X(grad_final, "dL/d final (the given d_out)", "n × d_model", by_grad)                           \
    X(grad_concat, "grad_final W_Oᵀ, or the given d_out", "n × H·d_v", by_grad)                    \
    X(grad_W_O, "concatᵀ grad_final", "H·d_v × d_model", by_grad)                                   \
    X(grad_b_O, "Σ_i grad_final", "1 × d_model", by_grad)                                           \
    X(grad_out, "grad_concat's columns of one head", "n × d_v", by_grad)                            \
    X(grad_v, "Aᵀ grad_out", "m × d_v", by_grad)                                                    \
    X(grad_dropped, "grad_out Vᵀ (train mode)", "n × m", by_grad)                                   \
    X(grad_weights, "grad_out Vᵀ", "n × m", by_grad)                                                \
    X(grad_masked, "A ⊙ (grad_weights − rowsum(grad_weights ⊙ A))", "n × m", by_grad)               \
    X(grad_capped, "grad_masked (the mask adds a constant)", "n × m", by_grad)                      \
    X(grad_scaled, "grad_masked", "n × m", by_grad)                                                 \
    X(grad_scores, "s · grad_scaled", "n × m", by_grad)                                             \
    X(grad_q_rot, "grad_scores K_rot", "n × d_k", by_grad)                                          \
    X(grad_k_rot, "grad_scoresᵀ Q_rot", "m × d_k", by_grad)                                         \
    X(grad_q, "grad_scores K", "n × d_k", by_grad)                                                  \
    X(grad_k, "grad_scoresᵀ Q", "m × d_k", by_grad)                                                 \
    X(grad_W_Q, "Xᵀ grad_q", "d_model × H·d_k", by_grad)                                            \
    X(grad_W_K, "X_sourceᵀ grad_k", "d_model × H_kv·d_k", by_grad)                                  \
    X(grad_W_V, "X_sourceᵀ grad_v", "d_model × H_kv·d_v", by_grad)                                  \
    X(grad_b_Q, "Σ_i grad_q", "1 × H·d_k", by_grad)                                                 \
    X(grad_b_K, "Σ_j grad_k", "1 × H_kv·d_k", by_grad)                                              \
    X(grad_b_V, "Σ_j grad_v", "1 × H_kv·d_v", by_grad)                                              \
    X(grad_x, "grad_q W_Qᵀ + grad_k W_Kᵀ + grad_v W_Vᵀ", "n × d_model", by_grad)                    \
    X(grad_x_source, "grad_k W_Kᵀ + grad_v W_Vᵀ", "m × d_model", by_grad)                           \
    X(jacobian, "diag(a_i) − a_i a_iᵀ, softmax's Jacobian at one row", "m × m", by_grad)            \
    X(lse, "m + ln ℓ, kept from the forward pass", "n × 1", by_grad)                                \
    X(delta, "rowsum(grad_out ⊙ out)", "n × 1", by_grad)                                            \
    X(p, "exp(z − lse): a tile's weights, recomputed", "Br × Bc", by_grad)                          \
    X(grad_p, "grad_out V_tᵀ", "Br × Bc", by_grad)                                                  \
    X(grad_s, "p ⊙ (grad_p − delta)", "Br × Bc", by_grad)                                          \
    X(given, "a matrix the problem file gives (exercise's Q, W_Q, …), named by its label", "as given", 0)

enum class StepName : std::uint8_t {
#define ATTN_TRACE_STEP_ID(name, holds, shape, commands) name,
    ATTN_TRACE_STEPS(ATTN_TRACE_STEP_ID)
#undef ATTN_TRACE_STEP_ID
};

struct StepInfo {
    StepName id;
    std::string name;  // as people type and read it
    std::string_view holds, shape;
    unsigned commands;  // StepCommands bits
};

// The table, in trace order (the order --steps, `expect` and explain list names in).
const std::vector<StepInfo>& step_table();
const StepInfo& step_info(StepName step);
inline const std::string& step_name(StepName step) { return step_info(step).name; }
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
