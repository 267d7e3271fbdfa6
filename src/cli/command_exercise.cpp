// `exercise`: generated problems with hand-friendly numbers and their worked answers, one
// or a worksheet of several, as questions, answer key or both (docs/COMMANDS.md#exercise).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attn_trace/exercise.hpp"
#include "attn_trace/split_list.hpp"
#include "commands.hpp"
#include "trace_options.hpp"

namespace attn_trace::cli {

namespace {

constexpr std::size_t max_count = 100;  // a sheet, not a book: each exercise is pages long

struct ExerciseOptions {
    std::string topics;
    std::uint64_t seed = 0;
    std::string part = "both";
    std::size_t count = 1;
    Format format = Format::markdown;
    std::optional<MathStyle> math;
    bool standalone = false;
};

// --count: a whole number from 1 to max_count. A number outside that (0, 2.5, 500) is
// told the nearest count there is; a word, the range.
std::string count_problem(const std::string& text) {
    std::size_t count = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
    if (error == std::errc{} && end == text.data() + text.size() && count >= 1 && count <= max_count) return "";
    const std::string range = fmt::format("expected a whole number of exercises from 1 to {}", max_count);
    double number = 0;
    std::size_t read = 0;
    try {
        number = std::stod(text, &read);
    } catch (const std::exception&) {
        read = 0;  // not a number at all
    }
    if (read != text.size() || !std::isfinite(number)) return fmt::format("'{}': {}", text, range);
    const double nearest = std::clamp(std::round(number), 1.0, static_cast<double>(max_count));
    return fmt::format("'{}': {} (the nearest is {:g})", text, range, nearest);
}

void add_exercise_command(CLI::App& app, int& exit_code) {
    static ExerciseOptions o;
    auto* exercise = app.add_subcommand("exercise", "generated problems with small, hand-friendly numbers and their complete worked answers");
    exercise->footer(R"(Every topic uses d_k = 4, so the scale is exactly 1/2; entries are small integers.
The same seed gives the same exercise on every machine; another seed, another exercise.
markdown, latex and text: the question, the given matrices (whole; a matrix holding
several heads is shown one head at a time), the numbered tasks, then the answer under
the same numbers ("Task 3: ..."): the steps each task asks for, the arithmetic of a
row, and what it asks in words. latex is a fragment for an article with amsmath
(--standalone: a whole document); text is for the terminal; html is a page of its
own, each task's answer behind a "Show" button until asked. json: the problem file with "expect" filled in
(4 decimals), which `attn-trace check` passes; kv-cache entries carry "t" (decode)
and tiled entries "tile" (check's default tiles, 2 × 2).

A worksheet: --part questions writes what a student works from (the givens and the
numbered tasks, no answer; in json, the problem without "expect"), --part answers the
key with the same numbers. --count N writes exercises 1..N on one sheet: exercise k
takes topic k of the --topic list (from its start again after the last) and seed
--seed + k - 1.

Examples:
  attn-trace exercise --topic softmax --seed 3
  attn-trace exercise --topic softmax --seed 3 --math github > softmax.md
  attn-trace exercise --topic gqa --seed 0 --format text
  attn-trace exercise --topic causal --seed 1 --format latex > causal.tex
  attn-trace exercise --topic kv-cache --seed 2 --format json > kv.json && attn-trace check kv.json
  attn-trace exercise --topic tiled --seed 0 --format html > tiled.html
  attn-trace exercise --topic softmax,causal --count 4 --seed 10 --part questions --format latex > sheet.tex
  attn-trace exercise --topic softmax,causal --count 4 --seed 10 --part answers --format latex > key.tex
  attn-trace exercise --topic softmax --part answers --format latex --standalone > key.tex && pdflatex key.tex)");
    exercise->add_option("--topic", o.topics, fmt::format("one, or a comma-separated list to cycle through: {}", fmt::join(exercise_topics(), ", ")))
        ->required();
    exercise->add_option("--seed", o.seed, "which exercise of the topic (the first of a sheet)")->capture_default_str();
    exercise->add_option("--part", o.part, "questions (no answers), answers (the key) or both")
        ->check(CLI::IsMember(exercise_part_names()))
        ->capture_default_str();
    exercise->add_option("--count", o.count, fmt::format("exercises on the sheet, 1 to {}", max_count))
        ->check(CLI::Validator(count_problem, "N", "count"))
        ->capture_default_str();
    add_format_option(*exercise, o.format, exercise_formats(), "markdown, latex, text, json or html");
    add_math_option(*exercise, o.math);
    add_standalone_flag(*exercise, o.standalone);
    exercise->callback([&exit_code] {
        require_standalone_format(o.format, o.standalone);  // before anything is computed
        std::cout << written_document(write_worksheet({split_list(o.topics, ','), o.seed, o.count, exercise_part(o.part), math_style(o.math, o.format)}, o.format),
                                      o.format, o.standalone);
        exit_code = 0;
    });
}

const CommandRegistration registration{80, add_exercise_command};

}  // namespace

}  // namespace attn_trace::cli
