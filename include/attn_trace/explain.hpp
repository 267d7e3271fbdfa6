#pragma once
// `explain` (SPEC §8): the arithmetic behind one number or one row of a computed
// trace, term by term. Every number printed is read from the trace (or is a product
// of numbers read from it), so the explanation shows the arithmetic that was done.
// Indices are 0-based, like the trace's row and column numbers and the JSON `head`.
#include <cstddef>
#include <optional>
#include <string>

#include "attn_trace/problem.hpp"
#include "attn_trace/trace.hpp"

namespace attn_trace {

// One cell, STEP[i,j], or one row, STEP[i].
struct ExplainTarget {
    std::string step;  // scores or weights for a cell; weights or out for a row
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
    std::string format = "text";  // text, markdown or latex
};

const std::vector<std::string>& explain_formats();

// Throws InputError when the row, column, head or batch is out of range.
std::string explain(const Trace& trace, const Problem& problem, const ExplainTarget& target, const ExplainOptions& options);

}  // namespace attn_trace
