#pragma once
// Generated exercises (docs/COMMANDS.md#exercise): a small problem with hand-friendly numbers
// (integers; d_k = 4 in every topic so that 1/√d_k = 1/2 and the scaled scores are
// halves) and its complete worked answer, computed by the pipelines themselves:
// every number of the answer is read from the trace, every count from the
// functions behind `cost` and `decode`.
// The numbers come from PortableRandom, so a seed gives the same exercise on
// every machine.
#include <cstdint>
#include <string>
#include <vector>

#include "attn_trace/format_table.hpp"
#include "attn_trace/render.hpp"

namespace attn_trace {

// scores, softmax, causal, padding, multihead, gqa, kv-cache, tiled, scale, cost.
const std::vector<std::string>& exercise_topics();
// formats_of(for_exercise) in the order exercise lists them: markdown (default),
// latex, text, json, html.
const std::vector<Format>& exercise_formats();

// markdown/latex/text: the question, the given matrices (whole, one block per head
// when a matrix holds several), the tasks, then the answer (every intermediate step
// and the arithmetic of at least one row). LaTeX is a fragment for an `article`
// with amsmath; Markdown is GitHub-flavoured; text is for the terminal; html is a
// page of its own, each part of the answer hidden until its reader opens it.
// json: the problem file with `expect` filled in, which `attn-trace check` passes
// (entries with "t" run decode, with "tile" run tiled, at check's default options).
// `math`: how Markdown writes the mathematics. Throws InputError for an unknown topic or format.
std::string write_exercise(const std::string& topic, std::uint64_t seed, Format format, MathStyle math = MathStyle::dollars);

}  // namespace attn_trace
