#pragma once
// Mask specs (docs/PROBLEM.md#masks) and the additive matrix M they make: 0 where query i may
// read key j, -inf where it may not, finite values acting as biases.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "attn_trace/matrix.hpp"
#include "attn_trace/sparse_pattern.hpp"

namespace attn_trace {

// Where a mask came from (docs/PROBLEM.md#masks): a model directory's own (causal, its
// window), the problem file's `mask` and `sparse`, or a command's mask option, which
// replaces the file's and combines with the model's.
enum class MaskOrigin { model, file, option };

struct MaskSpec {
    enum class Kind {
        none,
        causal_upper_left,    // j <= i
        causal_bottom_right,  // j <= i + (m - n)
        window,               // i + (m-n) - left <= j <= i + (m-n) + right
        key_valid,            // key j visible iff valid[j]
        additive,             // explicit (n, m) matrix added to the scores
        allowed,              // (n, m) booleans, true = may read
        blocked,              // (n, m) booleans, true = may not read
        chunked,              // j <= i + (m-n) in the same chunk of C positions (Llama 4)
        sparse,               // a sparse pattern (docs/FAMILY.md#sparse-patterns-which-pairs-are-scored-at-all): visible when any of its parts allows it
    };
    Kind kind = Kind::none;
    long window_left = 0, window_right = 0;
    long chunk = 0;  // C, the chunked mask's positions per chunk
    std::vector<bool> key_valid;
    Matrix matrix;       // additive values, or 1/0 for allowed/blocked
    SparsePattern sparse;
    std::string label;   // how the user wrote it, e.g. "causal" or "window:3"
    std::string path;    // where: "$.mask[1]", "$.sparse" (empty: given by a program)
    MaskOrigin origin = MaskOrigin::file;
    // The mask as it was written, as JSON text ("\"causal\"", {"window": …}): what a run's
    // JSON records in problem.mask_spec so that `check --golden` can apply it again.
    std::string given;

    bool needs_shape() const { return kind == Kind::additive || kind == Kind::allowed || kind == Kind::blocked; }
    bool is_causal() const { return kind == Kind::causal_upper_left || kind == Kind::causal_bottom_right; }
    // Whether each query reads one contiguous range of keys (key_range below).
    bool is_key_range() const { return is_causal() || kind == Kind::window || kind == Kind::chunked; }
};

// The one definition of the range masks' arithmetic: the keys first ≤ j < end that
// query i (of n, against m keys) may read under a range mask (is_key_range), with the
// query at key position i + (m − n) where the mask is bottom-right aligned; all keys
// [0, m) for any other kind. build_mask, the fast path's key ranges and explain read it.
struct KeyRange {
    long first = 0, end = 0;
};
KeyRange key_range(const MaskSpec& spec, std::size_t i, std::size_t n, std::size_t m);
// The range rule in words for query i, as explain writes it: "window:3: query 2
// (position 2) reads keys 0 to 2". Empty for a kind that is not a range.
std::string key_range_rule(const MaskSpec& spec, std::size_t i, std::size_t n, std::size_t m);
// How a mask depends on positions, for the permutation experiment: "a causal mask";
// empty for none.
std::string position_dependence(const MaskSpec& spec);
// The string forms of --mask, for help texts: "none, causal, …".
std::string mask_string_forms();

// Parses the string forms: none, causal, causal-upper-left, causal-bottom-right,
// causal-lower-right, window:W, chunked:C, padding:1,1,0. `where` prefixes error messages.
MaskSpec parse_mask_string(const std::string& text, const std::string& where);

// The combined additive mask for n queries and m keys: masks add, so a key is
// visible only if every mask allows it. key_length hides keys j >= key_length
// (a batch element's `lengths`); alibi_slope adds -slope * |i + (m - n) - j|.
// (n, m) -> M (n, m)
Matrix build_mask(const std::vector<MaskSpec>& masks, std::size_t n, std::size_t m,
                  std::size_t key_length, double alibi_slope);

// Rows first_row … first_row+row_count−1 of build_mask's M, each computed with its
// true query index, without the other rows: (row_count, m).
Matrix build_mask_rows(const std::vector<MaskSpec>& masks, std::size_t n, std::size_t m, std::size_t key_length,
                       double alibi_slope, std::size_t first_row, std::size_t row_count);

// "causal + padding:1,1,0", or "none".
std::string describe_masks(const std::vector<MaskSpec>& masks);

// A mask written as the other kind of mask, the mix-ups learners make
// (docs/PROBLEM.md#masks-written-the-wrong-way-round): an additive mask of only 0s and
// 1s (a bias of 1, not a block), or an allowed/blocked matrix of the opposite polarity:
// it leaves a query with no key where the other polarity would leave none (and the other
// polarity may be exactly the causal mask, the likeliest meaning).
struct MaskMixup {
    enum class Kind { additive_zero_one, polarity, opposite_causal };
    Kind kind = Kind::additive_zero_one;
    std::string where;      // the mask's JSON path, else its label
    std::string given;      // additive, allowed or blocked
    std::size_t query = 0;  // polarity: the first query the given polarity leaves with no key
};
std::optional<MaskMixup> mask_mixup(const MaskSpec& spec, std::size_t n, std::size_t m);
// The mix-up named, with what to write instead and the bool-polarity pitfall: the one
// wording of the note (when the mask is computed) and of the error (when it is refused).
std::string mask_mixup_text(const MaskMixup& mixup);

}  // namespace attn_trace
