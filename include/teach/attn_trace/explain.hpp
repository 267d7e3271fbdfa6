#pragma once
// `explain` (docs/COMMANDS.md#explain): the arithmetic behind one number or one row of a computed
// trace, term by term. Every number printed is read from the trace (or is a product
// of numbers read from it), so the explanation shows the arithmetic that was done.
// Indices are 0-based, like the trace's row and column numbers and the JSON `head`.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "attn_trace/format_table.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/problem.hpp"
#include "attn_trace/render_html.hpp"
#include "attn_trace/trace.hpp"

namespace attn_trace {

// One cell, STEP[i,j], or one row, STEP[i].
struct ExplainTarget {
    StepName step;  // any step of run, decode or tiled for a cell; weights or out for a row
    std::size_t row = 0;
    std::optional<std::size_t> column;  // set for a cell
    std::string spec;                   // as the user wrote it, for messages
};

// "scores[0,2]" / "weights[1]" (spaces allowed). Throws InputError naming what is
// wrong: a malformed spec, or a step that cannot be explained that way.
ExplainTarget parse_cell_spec(const std::string& text);
ExplainTarget parse_row_spec(const std::string& text);

struct ExplainOptions {
    int head = 0;
    int batch = 0;
    int precision = 4;            // every number rounded to this many decimals
    Format format = Format::text;  // one of formats_of(for_explain)
    MathStyle math = MathStyle::dollars;  // markdown: how the mathematics is written
};

// Which trace the target lives in: run's (neither t nor tile), decode's step t, or
// the tiled pass's tile [query block, key tile]. Their indices are the step's own
// rows and columns, as that trace prints them.
struct ExplainSource {
    std::optional<std::size_t> t;
    std::optional<std::array<std::size_t, 2>> tile;
    DecodeOptions decode;  // --prefill, for t
    TiledOptions tiled;    // --block-q, --block-k, for tile
};

// Explains the target from a whole computed trace (run's). Throws InputError when
// the row, column, head or batch is out of range, or the trace has no such step.
std::string explain(const Trace& trace, const Problem& problem, const ExplainTarget& target, const ExplainOptions& options);

// Computes only what the target reads (its query row, decode step or query block)
// and explains it: memory O((n + m) · d + m · H), never n · m. The numbers equal the
// whole trace's. Throws InputError for a target this problem's trace does not have,
// naming the steps it has.
std::string explain_problem(const Problem& problem, const RunOptions& run, const ExplainTarget& target, const ExplainOptions& options,
                            const ExplainSource& source = {});

// The bytes explain_problem will hold at most for this target (an estimate, to
// refuse before allocating).
double explain_bytes(const Problem& problem, const ExplainSource& source);

// The HTML page's explanations: every cell of the steps the page shows, each as
// `explain --cell` writes it in text, read from the trace itself (run's, grad's) or
// computed for its decode step or tile as explain_problem does (`source` carries
// decode's --prefill and tiled's block sizes). Only while those steps hold at most
// page_explained_cells cells in all; past that none, and the note says how to ask
// `explain` for one. A step explain cannot explain (a mask, a permuted output) has
// none, and its cells show the note.
inline constexpr std::size_t page_explained_cells = 4096;
CellExplanations explain_cells(const Trace& trace, const Problem& problem, const RunOptions& run, const std::vector<const Step*>& steps,
                               const ExplainSource& source, int precision);

}  // namespace attn_trace
