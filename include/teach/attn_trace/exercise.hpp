#pragma once
// Generated exercises (docs/COMMANDS.md#exercise): a small problem with hand-friendly numbers
// (integers; d_k = 4 in every topic so that 1/√d_k = 1/2 and the scaled scores are
// halves) and its complete worked answer, computed by the pipelines themselves:
// every number of the answer is read from the trace, every count from the
// functions behind `cost` and `decode`.
// The numbers come from PortableRandom, so a seed gives the same exercise on
// every machine.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attn_trace/format_table.hpp"
#include "attn_trace/render.hpp"

namespace attn_trace {

// scores, softmax, causal, padding, multihead, gqa, kv-cache, tiled, scale, cost,
// sparse, mla, dropout, permutation, grad.
const std::vector<std::string>& exercise_topics();
// formats_of(for_exercise) in the order exercise lists them: markdown (default),
// latex, text, json, html.
const std::vector<Format>& exercise_formats();

// Which half of a worksheet to write (docs/COMMANDS.md#worksheets): the questions a
// student works from (no answer in them), the answer key, or both, each exercise's
// answer after its questions.
enum class ExercisePart { questions, answers, both };
// "questions", "answers", "both", in that order (the order of the enum).
const std::vector<std::string>& exercise_part_names();
// "questions" → ExercisePart::questions; throws InputError naming the nearest part.
ExercisePart exercise_part(const std::string& name);

// A worksheet of `count` exercises numbered 1..count: exercise k (counting from 1)
// takes topics[(k − 1) mod topics.size()] and seed + k − 1, so a sheet of one is the
// exercise of `seed`, and the questions and the answers of the same request number
// the same exercises the same way.
struct Worksheet {
    std::vector<std::string> topics;
    std::uint64_t seed = 0;
    std::size_t count = 1;
    ExercisePart part = ExercisePart::both;
    MathStyle math = MathStyle::dollars;  // how Markdown writes the mathematics
};

// markdown/latex/text/html, for each exercise: its heading "Exercise k: …", then
// (questions) the question, the given matrices (whole, one block per head when a
// matrix holds several) and the numbered tasks, and (answers) every intermediate step
// and the arithmetic of at least one row. LaTeX is a fragment for an `article` with
// amsmath; Markdown is GitHub-flavoured; text is for the terminal; html is a page of its
// own, where a sheet of both parts hides each part of an answer until its reader opens it.
// json: the problem file, with `expect` filled in unless only the questions are asked
// for; `attn-trace check` passes it (entries with "t" run decode, with "tile" run tiled,
// at check's default options). A sheet of several exercises is a JSON array of them.
// Throws InputError for an unknown topic, an empty topic list, a count of 0 or a
// format exercises are not written in.
std::string write_worksheet(const Worksheet& sheet, Format format);

// One exercise: write_worksheet({{topic}, seed, 1, part, math}, format).
std::string write_exercise(const std::string& topic, std::uint64_t seed, Format format, ExercisePart part = ExercisePart::both,
                           MathStyle math = MathStyle::dollars);

}  // namespace attn_trace
