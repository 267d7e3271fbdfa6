#pragma once
// A validated attention problem (docs/PROBLEM.md#the-problem-file): what the JSON file
// says, checked and converted to one orientation (math: Q = X W + b), ready for the
// pipelines.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attn_trace/cost.hpp"
#include "attn_trace/dtype.hpp"
#include "attn_trace/mask.hpp"
#include "attn_trace/step_table.hpp"
#include "attn_trace/matrix.hpp"
#include "attn_trace/tolerances.hpp"

namespace attn_trace {

enum class EmptyRows { error, zero, nan };

struct Scale {
    enum class Kind { automatic, none, value } kind = Kind::automatic;
    double value = 1.0;  // used when kind == value
};

// How a long-context model reshapes RoPE's angles
// (docs/PROBLEM.md#rope-scaling-partial-rotary): the parameters as transformers names them.
struct RopeScaling {
    enum class Type { none, linear, dynamic, yarn, llama3 } type = Type::none;
    double factor = 1.0;
    double original_max_positions = 0.0;               // original_max_position_embeddings
    double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
    double beta_fast = 32.0, beta_slow = 1.0;          // yarn
    std::optional<double> attention_factor, mscale, mscale_all_dim;  // yarn
};

// Rotary position embedding on q and k of every head.
struct Rope {
    enum class Style { interleaved, half } style = Style::interleaved;
    double base = 10000.0;
    std::vector<double> angles_deg;  // one per pair; when given, base is not used
    std::size_t rotary_dims = 0;     // partial rotary: the first rotary_dims columns of a head turn; 0 = all
    RopeScaling scaling;
    // Resolved when the problem is loaded: θ_p of every pair (radians per position, from
    // base or angles_deg and the scaling) and the factor on cos and sin (yarn's).
    std::vector<double> theta;
    double attention_factor = 1.0;
};

// θ_p for the rotary_dims turned columns of a head under `rope`'s base and scaling, and
// the factor on cos and sin; dynamic scaling reads seq_len (the largest position + 1).
// Throws InputError naming `where` for parameters the formulas cannot take.
void resolve_rope(Rope& rope, std::size_t rotary_dims, double seq_len, const std::string& where);
std::string rope_scaling_name(RopeScaling::Type type);

// Dropout on the attention weights
// (docs/FAMILY.md#dropout-on-the-weights-and-the-traineval-trap). In train mode `keep` (0
// or 1, each 1 with probability 1 − p) multiplies the weights, scaled by 1 / (1 − p); in
// eval mode (the default) nothing is dropped.
struct Dropout {
    double p = 0.0;  // 0 ≤ p < 1
    std::uint64_t seed = 0;
    bool train = false;
};

// Multi-head latent attention (DeepSeek-V2;
// docs/FAMILY.md#mla-multi-head-latent-attention-deepseek-v2), math orientation. The keys
// and values of every head come from one latent c_kv = X_src W_DKV, the only content that
// is cached; with rope_dims d_r a decoupled RoPE part is added to the scores, its key
// part k_rope = RoPE(X_src W_KR) shared by every head.
// The pipelines see each head's query and key as [q_h, q_rope_h] and
// [k_h, k_rope] (Problem::d_k = d_content + d_r), so q·k is exactly
// q_h k_hᵀ + q_rope_h k_ropeᵀ and every pipeline computes MLA unchanged.
struct Mla {
    // RMSNorm of a latent (DeepSeek-V3's q_a_layernorm, kv_a_layernorm): x / √(mean(x²) + eps) · w.
    struct LatentNorm {
        std::vector<double> weight;
        double eps = 1e-6;
    };
    Matrix W_DKV, W_UK, W_UV;          // (d_src, d_c), (d_c, H·d_content), (d_c, H·d_v)
    std::optional<LatentNorm> c_q_norm, c_kv_norm;  // applied to c_q and c_kv before they are expanded
    std::optional<Matrix> W_DQ, W_UQ;  // (d_model, d_cq), (d_cq, H·d_content): query compression
    std::optional<Matrix> W_QR, W_KR;  // (d_cq or d_model, H·d_r), (d_src, d_r): the decoupled RoPE part
    std::size_t d_c = 0, d_cq = 0, d_r = 0, d_content = 0;
    Rope rope;  // the decoupled part's angles (the problem's `rope`; default base 10000, interleaved)
};

// RMSNorm of the queries and keys before RoPE (qk-norm: Qwen3, OLMo 2, Gemma 3;
// docs/PROBLEM.md#qk-norm): x / √(mean(x²) + eps) · (offset + w), the mean taken over each
// head's d_k columns (per_head) or over the whole projection (OLMo 2).
struct QkNorm {
    bool per_head = true;
    std::vector<double> q_weight, k_weight;  // d_k each, or H·d_k and H_kv·d_k
    double eps = 1e-6;
    double weight_offset = 0.0;  // Gemma 3 scales by 1 + w
};

// One `expect` entry (docs/PROBLEM.md#expect-values-for-attn-trace-check).
struct Expectation {
    StepName name;
    std::optional<int> head, batch, t;
    std::optional<std::array<int, 2>> tile;
    std::optional<std::size_t> row;  // a jacobian entry's query row (grad --row)
    Matrix data;
    double atol = tolerances::check_default.atol;
    double rtol = tolerances::check_default.rtol;
    bool own_tolerance = false;  // the entry gives "atol" or "rtol" (check's --decimals leaves it)
    std::string json_path;  // "$.expect[3]", for messages
};

struct Problem {
    std::string file;  // where it came from, for messages ("<stdin>" for -)
    std::string title;
    std::vector<std::string> tokens, source_tokens;

    // Either token vectors with projections ...
    std::vector<Matrix> X;         // one (n, d_model) matrix per batch element
    std::vector<Matrix> X_source;  // (m, d_src) per batch element, cross-attention only
    std::optional<Matrix> W_Q, W_K, W_V, W_O;  // math orientation (d_in, d_out)
    std::optional<std::vector<double>> b_Q, b_K, b_V, b_O;
    // ... or the projections themselves, all heads side by side.
    std::optional<Matrix> Q, K, V;

    int heads = 1;
    int kv_heads = 1;
    Scale scale;
    // The model's masks first (origin model), then the file's or a mask option's
    // (docs/PROBLEM.md#masks): all of them add.
    std::vector<MaskSpec> masks;
    // From a model directory (docs/PROBLEM.md#a-model-directory-checkpointmodel): what its
    // config resolved for the layer, as the JSON text of `problem.model`; "" otherwise.
    std::string model;
    // The number type of a model directory's weights (its out-projection's safetensors
    // dtype); unset for any other problem. A half-type run of a checkpoint stored in the
    // other half type rounds its weights, and says so (docs/PROBLEM.md#dtype-half-precision).
    std::optional<Dtype> checkpoint_dtype;
    // A model directory's KV cache, every layer (what `decode` counts unless its own
    // layers are given; its attention_parameters are not read, 0); unset otherwise.
    std::optional<ModelCacheFacts> model_cache;
    EmptyRows empty_rows = EmptyRows::error;
    // The file's "dtype" (docs/PROBLEM.md#dtype-half-precision); a command's dtype option
    // overrides it, and without either a run computes in f64.
    std::optional<Dtype> dtype;
    std::vector<std::size_t> lengths;  // per batch element; empty = all valid
    std::optional<Rope> rope;
    std::optional<QkNorm> qk_norm;
    std::vector<double> positions, source_positions;  // empty = default
    std::optional<double> softcap;
    std::optional<std::vector<double>> alibi_slopes;  // set when alibi is on
    std::optional<Dropout> dropout;
    std::optional<Mla> mla;  // with it, `rope` lives in mla->rope and turns the decoupled part only
    std::vector<Matrix> d_out;  // grad's upstream gradient per batch element (n, output width); empty = not given
    std::vector<Expectation> expect;
    // Non-finite numbers in input matrices are an error unless allowed
    // (docs/PROBLEM.md#non-finite-inputs-allow_nonfinite).
    bool allow_nonfinite = false;
    std::string first_nonfinite;  // "$.Q[0][1] is nan" when allowed and present, for the note

    // Sizes, derived when the problem is validated.
    bool batched = false;  // X was given as (B, n, d): steps carry their batch index
    // With mla, d_k is d_content + d_r: the width each head's scores are a dot product over.
    std::size_t batch = 1, n = 0, m = 0, d_model = 0, d_src = 0, d_k = 0, d_v = 0;

    bool from_tokens() const { return !X.empty(); }
    bool cross_attention() const { return !X_source.empty(); }
    double scale_factor() const;  // s of Z = s·S + M
};

class SafetensorsFile;

// A model held in memory (the Python package's trace_model, docs/PYTHON.md#whole-models):
// what a model directory holds, its config.json and its tensors, read as a directory is
// read and never written to disk. A problem names it by `name` in "checkpoint": {"model":
// name} (docs/PROBLEM.md#a-model-directory-checkpointmodel).
struct ModelInMemory {
    std::string name;
    std::string config;                              // config.json's text
    std::shared_ptr<const SafetensorsFile> tensors;  // its tensors, as one safetensors file in memory
};
// The safetensors bytes are checked (as a file's are) once, here.
ModelInMemory hold_model(std::string name, std::string config, std::string safetensors);

// Reads and validates a problem file; "-" reads standard input.
// Throws JsonPathError / InputError (exit code 2) naming the file and the JSON path.
// allow_nonfinite (--allow-nonfinite) has the effect of "allow_nonfinite": true in the file.
Problem load_problem(const std::string& path, bool allow_nonfinite = false);
// `model`, where given, is the model in memory its checkpoint may name.
Problem parse_problem(const std::string& text, const std::string& file_label, bool allow_nonfinite = false, const ModelInMemory* model = nullptr);

// Re-checks what depends on several keys (mask shapes against n and m, lengths
// against the batch): called again after command-line options replace file values.
void validate_masks(const Problem& problem);

// A --mask value: a string form (docs/PROBLEM.md#masks) or JSON, one spec object or a list of
// them ({"sparse": {...}} among them), for n queries and m keys; "none" is no mask.
std::vector<MaskSpec> parse_mask_option(const std::string& text, std::size_t n, std::size_t m, const std::string& where);
// Every mask of the problem as written, as JSON text: one mask alone, several as a list,
// "" for none. A run's JSON records it (problem.mask_spec) for `check --golden`.
std::string recorded_mask_spec(const Problem& problem);
// The problem's masks of `origin` file or option replaced by `masks` (marked `origin`);
// the model's own masks stay first, as a file's mask combines with them
// (docs/PROBLEM.md#masks).
void replace_masks(Problem& problem, std::vector<MaskSpec> masks, MaskOrigin origin);
// Every layer of the model directory DIR (relative to the working directory), through the
// same reader as "checkpoint": {"model": DIR}; its errors are InputErrors.
ModelCacheFacts read_model_cache(const std::string& dir);

// The masks of a recorded mask_spec (a JSON string form, object or list; "" for none),
// for n queries and m keys; errors name `where`.
std::vector<MaskSpec> masks_from_spec(const std::string& mask_spec, std::size_t n, std::size_t m, const std::string& where);

std::string empty_rows_name(EmptyRows policy);
EmptyRows parse_empty_rows(const std::string& text, const std::string& where);
Scale parse_scale(const std::string& text, const std::string& where);
// `alibi: true`'s slope per head, for any number of heads (docs/PROBLEM.md#alibi).
std::vector<double> alibi_slopes(int heads);

}  // namespace attn_trace
