#pragma once
// A backend is the small table of operations the pipelines and bench compute
// with (docs/ARCHITECTURE.md#the-backend-table), in the manner of ggml's backend table: every
// computation goes through one, and each answers `supports` before it is asked.
// The CPU reference is the judge of every other backend; CUDA sits behind the
// same table.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attn_trace/dtype.hpp"
#include "attn_trace/matrix.hpp"
#include "attn_trace/sparse_pattern.hpp"

namespace attn_trace {

enum class Operation {
    multiply,             // a (n, k) · b (k, m)
    multiply_transposed,  // a (n, d) · b (m, d)ᵀ
    fused_attention,      // softmax(s·Q Kᵀ + M) V tile by tile with online softmax, never holding (n, m) scores
    unfused_attention,    // the same the straightforward way: the (n, m) scores, a full-row softmax, then P V
    tensor_core_attention,  // fused attention on tensor cores: Q, K, V rounded to AttentionCall::half, sums in float32
    fused_attention_backward,  // the gradients of fused attention, FlashAttention-2's way: tiles recomputed from lse
    decode_attention,     // one decode step: one query per head (n = 1) over a KV cache, the cache split in chunks across
                          // threads and each chunk's partial softmaxes merged (flash-decoding); no mask
};
std::string operation_name(Operation op);  // "fused attention"

// The 16-bit type tensor_core_attention rounds its inputs to.
enum class HalfType { fp16, bf16 };
std::string half_type_name(HalfType type);  // "fp16", "bf16"

// Which keys each query may read, in the form a kernel can use tile by tile.
// Combines like a list of masks (docs/PROBLEM.md#lists-of-masks): a key is visible only if every
// part allows it; biases add.
struct KeyMask {
    // Query i reads only keys in [first_key[i], end_key[i]) (causal, window, `lengths`).
    // Empty = all keys. Tiles outside every row's range of a block are skipped.
    std::vector<std::size_t> first_key, end_key;
    // Key j is visible only if key_valid[j] (key_valid / padding specs); empty = all.
    std::vector<unsigned char> key_valid;
    // (n, m) additive values (additive, allowed, blocked specs: 0, −∞ or a bias); empty = none.
    Matrix dense;
    // ALiBi slope per query head; empty = none. Adds −slope·|i + (m − n) − j|.
    std::vector<double> alibi_slopes;
    // Sparse patterns (docs/FAMILY.md#sparse-patterns-which-pairs-are-scored-at-all): key
    // j is visible only if every pattern allows it. Tiles in which no pair is allowed are
    // skipped whole.
    std::vector<SparsePattern> patterns;

    // Whether some entries need more than the row ranges.
    bool has_elementwise() const { return !key_valid.empty() || !dense.empty() || !alibi_slopes.empty() || !patterns.empty(); }
    // Whether the patterns allow query i to read key j, and some query of [i0, i1) some key of [j0, j1).
    bool patterns_allow(std::size_t i, std::size_t j, std::size_t n, std::size_t m) const;
    bool patterns_touch(std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1, std::size_t n, std::size_t m) const;
    bool patterns_cover(std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1, std::size_t n, std::size_t m) const;
};

// One sequence's attention, every head: out_h = softmax(s·Q_h K_gᵀ + M) V_g,
// query head h reading KV head g = h / (H / H_kv) (GQA).
struct AttentionCall {
    const Matrix* q = nullptr;  // (n, ≥ H·d_k): query head h in columns h·d_k …
    const Matrix* k = nullptr;  // (m, ≥ H_kv·d_k)
    const Matrix* v = nullptr;  // (m, ≥ H_kv·d_v)
    std::size_t d_k = 0, d_v = 0;
    int heads = 1, kv_heads = 1;
    double scale = 1.0;             // s of Z = s·Q Kᵀ + M
    std::optional<double> softcap;  // c: Z = c·tanh(s·Q Kᵀ / c) + M
    const KeyMask* mask = nullptr;  // null = every key visible
    Dtype dtype = Dtype::f32;       // what the kernel computes in; the inputs are rounded to it as they are read
    HalfType half = HalfType::fp16; // tensor_core_attention only: what Q, K and V are rounded to first
    bool empty_rows_nan = false;    // out of a row that reads no key: NaN, else 0 (the empty-row policy)
    int threads = 1;
    std::size_t block_q = 0, block_k = 0;  // Br, Bc; 0 = the kernel's own
    // decode_attention in float32: optional float copies of q, k and v (same layout). A decode
    // step reads each cached key and value once, so rounding the double matrices on every
    // call would cost as much memory traffic as the step itself; bench keeps a float cache.
    const float* q_f32 = nullptr;
    const float* k_f32 = nullptr;
    const float* v_f32 = nullptr;
    std::size_t decode_chunk = 0;  // keys per chunk of the cache; 0 = the kernel's own

    std::size_t n() const { return q->rows(); }
    std::size_t m() const { return k->rows(); }
};

struct AttentionStats {
    std::size_t tiles_computed = 0, tiles_skipped = 0;
    std::size_t score_bytes_held = 0;      // scores held at once, all workers together
    int workers = 0;                       // threads used
    std::size_t block_q = 0, block_k = 0;  // the Br and Bc used
};

struct AttentionResult {
    Matrix out;               // (n, H·d_v): head h in columns h·d_v … (the concat step of docs/COMMANDS.md#run)
    Matrix row_max, row_sum;  // (H, n): each row's final m (−∞ when it read no key) and ℓ; empty for unfused attention
    AttentionStats stats;
};

// The gradients of L = Σ d_out ⊙ out for every head of one call (docs/COMMANDS.md#grad).
struct AttentionGradients {
    Matrix out;             // (n, H·d_v): the forward's output, the concat step
    Matrix lse, delta;      // (H, n): m + ln ℓ (−∞ for a row that reads no key) and rowsum(d_out ⊙ out)
    Matrix grad_q;          // (n, H·d_k)
    Matrix grad_k, grad_v;  // (m, H_kv·d_k), (m, H_kv·d_v): each KV head's summed over its query heads
    AttentionStats stats;
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;
    // Whether this backend can do `op`; for the attention operations, whether it
    // can do this call of it (dtype, mask, head widths). When not, `why` says
    // what is missing. ggml's supports_op.
    virtual bool supports(Operation op, const AttentionCall* call, std::string& why) const = 0;
    // a (n, k) · b (k, m) -> (n, m), accumulated in the dtype.
    virtual Matrix multiply(const Matrix& a, const Matrix& b, Dtype dtype) const = 0;
    // a (n, d) · b (m, d)ᵀ -> (n, m): scores without materialising Kᵀ.
    virtual Matrix multiply_transposed(const Matrix& a, const Matrix& b, Dtype dtype) const = 0;
    // Only for calls `supports` accepts: reach them through attend(), which asks first.
    virtual AttentionResult fused_attention(const AttentionCall& call) const = 0;
    virtual AttentionResult unfused_attention(const AttentionCall& call) const = 0;
    virtual AttentionResult tensor_core_attention(const AttentionCall& call) const = 0;
    // d_out is (n, H·d_v), the upstream gradient of the heads' concatenated out.
    virtual AttentionGradients fused_attention_backward(const AttentionCall& call, const Matrix& d_out) const = 0;
    // Not pure: a backend without a decode kernel answers `supports` with false and never gets here.
    virtual AttentionResult decode_attention(const AttentionCall& call) const;
};

// `op` (one of the attention operations) of `call` on `backend`; throws
// BackendUnavailable (exit 3) naming the backend, the operation and what is
// missing when the backend does not support this call.
AttentionResult attend(const Backend& backend, Operation op, const AttentionCall& call);
// The fused backward of `call` on `backend`, asked and refused the same way.
AttentionGradients attend_backward(const Backend& backend, const AttentionCall& call, const Matrix& d_out);

// "cpu" always; "cuda" when built with CUDA and a GPU is present.
// Throws BackendUnavailable (exit 3) otherwise, InputError for unknown names.
std::unique_ptr<Backend> make_backend(const std::string& name);

}  // namespace attn_trace
