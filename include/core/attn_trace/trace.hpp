#pragma once
// The trace (docs/COMMANDS.md#run): an ordered list of named steps, each a matrix with its
// shape, formula and labels. Every pipeline produces one; every renderer reads one.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attn_trace/matrix.hpp"
#include "attn_trace/step_table.hpp"

namespace attn_trace {

// A cell that a run in f32 or a half type lost (docs/PROBLEM.md#dtype-half-precision): it
// overflowed to ±inf where the f64 run is finite, or fell to 0 where the f64 run is not 0.
enum class CellLoss : std::uint8_t { overflowed, underflowed };
struct LostCell {
    std::size_t row, column;
    CellLoss loss;
};
// A step keeps the places of at most this many lost cells (24 bytes each), the first in
// row-major order, and counts them all: a large step in f16 can lose millions
// (docs/COMMANDS.md#options-shared-by-run-decode-and-tiled).
constexpr std::size_t lost_cells_kept = 1000;

struct Step {
    StepName name;        // scores, weights, out, ... (step_table.hpp)
    std::optional<int> head, batch, t;
    std::optional<std::array<int, 2>> tile;  // [query block, key tile]
    std::string formula;  // "Q Kᵀ", "softmax(masked)", ...
    Matrix values;
    std::vector<std::string> row_labels, column_labels;  // token names; empty = indices
    std::string label;  // a `given` matrix's own name (Q, W_Q); empty for every other step
    // decode's rolling cache (a sliding window): the positions this step dropped from the
    // cache, empty when none; absent where the cache only grows.
    std::optional<std::vector<std::size_t>> evicted = std::nullopt;
    // A run in f32, f16 or bf16 against the same run in f64: the largest |value − f64 value|
    // (value_difference, compare.hpp), the cells it lost in row-major order (the first
    // lost_cells_kept of them) and how many it lost of each kind. Unset, empty and 0 in an
    // f64 run, and where the f64 run has no such step.
    std::optional<double> max_abs_error_vs_f64 = std::nullopt;
    std::vector<LostCell> lost_cells = {};
    std::size_t overflowed_cells = 0, underflowed_cells = 0;
    // The cell's loss, if it lost one.
    std::optional<CellLoss> loss_at(std::size_t row, std::size_t column) const;
};

// The name a step is written under: its label, else its step name.
inline const std::string& shown_name(const Step& step) { return step.label.empty() ? step_name(step.name) : step.label; }

// What the trace was computed from, as written in the JSON "problem" object.
struct TraceSummary {
    std::string title;
    std::size_t batch = 1, n = 0, m = 0, d_model = 0;
    int heads = 1, kv_heads = 1;
    std::size_t d_k = 0, d_v = 0;
    double scale = 1.0;
    std::string mask = "none";
    std::string dtype = "f64";
    std::string backend = "cpu";
    std::string empty_rows = "error";
    // The settings whole, for `check --golden` (docs/COMMANDS.md#check): the masks as
    // given (JSON text, "" for none) and dropout as {p, seed, mode}. A golden written
    // before they were recorded has neither, and `recorded` is false.
    std::string mask_spec;
    struct Dropout {
        double p = 0;
        std::uint64_t seed = 0;
        bool train = false;
    };
    std::optional<Dropout> dropout;
    std::string model;  // the problem's model summary (JSON text), "" when not from a model directory
    bool recorded = true;
};

// Where a step sits: a part for each of its batch, head, t and tile that is set,
// in that order, as the key and its number ("batch", "1"; "tile", "[0, 1]"). The
// one source of every "batch 1, head 0" a label, a heading or a title writes.
struct PlacePart {
    std::string key, value;
};
std::vector<PlacePart> step_place(std::optional<int> head, std::optional<int> batch, std::optional<int> t, std::optional<std::array<int, 2>> tile);
// A step's place; a step of a KV head (per_kv_head) says "KV head", not "head".
std::vector<PlacePart> step_place(const Step& step);
// The steps whose head is a KV head: decode's caches, grad_k and grad_v.
bool per_kv_head(StepName name);

// "weights (batch 1, head 0)": a name followed by its place, the name alone where the
// place is empty.
std::string placed_name(const std::string& name, const std::vector<PlacePart>& place);
// "weights (batch 1, head 0, t 2, tile [0, 1])": a step named in a message, as
// check's report and the overflow error write it.
std::string step_label(StepName name, std::optional<int> head, std::optional<int> batch, std::optional<int> t,
                       std::optional<std::array<int, 2>> tile);
inline std::string step_label(const Step& step) { return step_label(step.name, step.head, step.batch, step.t, step.tile); }

// The kinds of note, each phrased once by the renderers (render/note_text.cpp switches
// on the kind, so -Wswitch names it when a kind is added). mla stays last:
// tests/test_notes.cpp counts the kinds up to it.
enum class NoteKind : std::uint8_t {
    causal_alignment, nonfinite_inputs, kv_sharing, overflow, empty_rows, fast_path, tiled, tile_legend, tile_skipped,
    more_tiles_skipped, decode, prefill, cache_offset, decode_reference, cache_heads, kv_cache_size, kv_cache_sharing, rolling_cache,
    dynamic_rope_decode, checkpoint_rounded, dropout_train, dropout_eval, permutation, grad_tiled_unchecked, mla_cache_size, model_cache_size, mla,
    mask_mixup
};

// A note is a fact about the computation, not a sentence: its kind and the
// numbers and words that fill it. The renderers phrase it (note_text, render.hpp),
// so the pipelines write no prose and no formatted sizes, and a program can ask a
// trace what it says (notes_of) without reading English.
struct Note {
    NoteKind kind;
    std::map<std::string, double> numbers;   // counts, sizes in bytes, indices
    std::map<std::string, std::string> words;  // names: a mask, a policy, a backend, a step label
    bool has(const std::string& key) const { return numbers.count(key) || words.count(key); }
    double number(const std::string& key) const;        // throws std::out_of_range when absent: a phrasing bug
    const std::string& word(const std::string& key) const;
};

// An "overflow" note's fact as a clause, "scores (head 0)[0, 2] is inf although
// every input is finite: ...": the overflow error and the note both say it.
std::string overflow_text(const Note& note);

struct Trace {
    std::string command = "run";  // run, decode, tiled, grad, permute
    TraceSummary problem;
    std::vector<Step> steps;
    std::vector<Note> notes;  // alignment of causal masks, empty rows, head sharing, ...
    std::vector<std::pair<std::string, double>> numbers;  // max_abs_diff_vs_full, ...

    // The first step matching name/head/batch/t/tile, or nullptr. A step without a
    // head (or batch) matches a request for head 0 only when it has no head at all.
    const Step* find(StepName name, std::optional<int> head, std::optional<int> batch, std::optional<int> t,
                     std::optional<std::array<int, 2>> tile) const;
    // The notes of one kind, in order.
    std::vector<const Note*> notes_of(NoteKind kind) const;
};

}  // namespace attn_trace
