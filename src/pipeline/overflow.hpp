#pragma once
// Overflow is reported, not printed as numbers
// (docs/COMMANDS.md#options-shared-by-run-decode-and-tiled): every input of the problem
// was finite, yet a product, a scale or an exponential passed the dtype's range and a
// step holds a NaN or an infinity that no mask put there.
#include "attn_trace/problem.hpp"
#include "attn_trace/trace.hpp"

namespace attn_trace {

// Scans the trace's steps in order for the first cell no mask or empty-row policy
// explains: −∞ stands in masks, masked scores and their maxima (and in decode's and
// tiled's scores, which carry the mask row); NaN in weights, out, concat and final
// under empty_rows = nan. Throws InputError naming the step and the cell; with
// allow_nonfinite, adds a note instead. Inputs that were already non-finite (allowed)
// spread by design, so nothing is checked then.
void check_overflow(Trace& trace, const Problem& problem, Dtype dtype);

}  // namespace attn_trace
