// `exercise`: a generated problem with hand-friendly numbers and its worked answer
// (docs/COMMANDS.md#exercise).
#include <iostream>

#include <fmt/format.h>

#include "attn_trace/exercise.hpp"
#include "commands.hpp"
#include "trace_options.hpp"

namespace attn_trace::cli {

namespace {

struct ExerciseOptions {
    std::string topic;
    std::uint64_t seed = 0;
    Format format = Format::markdown;
    std::optional<MathStyle> math;
};

void add_exercise_command(CLI::App& app, int& exit_code) {
    static ExerciseOptions o;
    auto* exercise = app.add_subcommand("exercise", "a generated problem with small, hand-friendly numbers and its complete worked answer");
    exercise->footer(R"(Every topic uses d_k = 4, so the scale is exactly 1/2; entries are small integers.
The same seed gives the same exercise on every machine; another seed, another exercise.
markdown, latex and text: the question, the given matrices (whole; a matrix holding
several heads is shown one head at a time), the tasks, then every intermediate step
and the arithmetic of at least one row. latex is a fragment for an article with
amsmath; text is for the terminal; html is a page of its own, each part of the answer
behind a "Show" button until asked. json: the problem file with "expect" filled in
(4 decimals), which `attn-trace check` passes; kv-cache entries carry "t" (decode)
and tiled entries "tile" (check's default tiles, 2 × 2).

Examples:
  attn-trace exercise --topic softmax --seed 3
  attn-trace exercise --topic softmax --seed 3 --math github > softmax.md
  attn-trace exercise --topic gqa --seed 0 --format text
  attn-trace exercise --topic causal --seed 1 --format latex > causal.tex
  attn-trace exercise --topic kv-cache --seed 2 --format json > kv.json && attn-trace check kv.json
  attn-trace exercise --topic tiled --seed 0 --format html > tiled.html)");
    exercise->add_option("--topic", o.topic, fmt::format("{}", fmt::join(exercise_topics(), ", ")))->required();
    exercise->add_option("--seed", o.seed, "which exercise of the topic")->capture_default_str();
    add_format_option(*exercise, o.format, exercise_formats(), "markdown, latex, text, json or html");
    add_math_option(*exercise, o.math);
    exercise->callback([&exit_code] {
        std::cout << write_exercise(o.topic, o.seed, o.format, math_style(o.math, o.format));
        exit_code = 0;
    });
}

const CommandRegistration registration{80, add_exercise_command};

}  // namespace

}  // namespace attn_trace::cli
