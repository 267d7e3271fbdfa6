// Exercises: every topic × several seeds is a problem that `check` passes, the
// same seed writes the same exercise, another seed another one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "attn_trace/check.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/exercise.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;

TEST_CASE("every topic's JSON passes check for several seeds") {
    for (const auto& topic : exercise_topics())
        for (std::uint64_t seed : {0, 1, 2, 7, 12345}) {
            INFO("topic " << topic << ", seed " << seed);
            const Problem problem = parse_problem(write_exercise(topic, seed, Format::json), "exercise.json");
            REQUIRE_FALSE(problem.expect.empty());
            CheckOptions options;
            options.run.dtype = problem.dtype.value_or(Dtype::f64);  // as check does: the file's dtype (precision's is f16)
            const CheckResult result = check_expectations(problem, options);
            CHECK(result.passed());
        }
}

TEST_CASE("kv-cache exercises check decode steps, tiled exercises tiled steps") {
    CHECK(pipeline_for(parse_problem(write_exercise("kv-cache", 3, Format::json), "kv.json").expect) == "decode");
    CHECK(pipeline_for(parse_problem(write_exercise("tiled", 3, Format::json), "tiled.json").expect) == "tiled");
    CHECK(pipeline_for(parse_problem(write_exercise("causal", 3, Format::json), "causal.json").expect) == "run");
}

TEST_CASE("the same seed writes the same exercise, another seed another one") {
    for (const auto& topic : exercise_topics()) {
        INFO("topic " << topic);
        CHECK(write_exercise(topic, 5, Format::markdown) == write_exercise(topic, 5, Format::markdown));
        CHECK(write_exercise(topic, 5, Format::json) != write_exercise(topic, 6, Format::json));
    }
}

TEST_CASE("a seed's numbers are pinned, so every platform writes the same exercise") {
    // If the portable generator or the plan changes, this file changes: update it on purpose.
    const std::string json = write_exercise("scores", 1, Format::json);
    CHECK(json.find("\"title\": \"exercise scores (seed 1): Scores: Q Kᵀ and the scale\"") != std::string::npos);
    const Problem problem = parse_problem(json, "scores.json");
    CHECK(problem.d_k == 4);
    CHECK(problem.scale_factor() == 0.5);
    // Hand-friendly: every given number and every score is an integer, every scaled score a half.
    for (double x : problem.Q->data()) CHECK(x == std::floor(x));
    for (const auto& e : problem.expect)
        for (double x : e.data.data()) CHECK(x * (e.name == StepName::scaled ? 2 : 1) == std::floor(x * (e.name == StepName::scaled ? 2 : 1)));
}

TEST_CASE("the worked answer shows the steps and the arithmetic of a row, in Markdown and LaTeX") {
    const std::string md = write_exercise("causal", 2, Format::markdown);
    CHECK(md.find("## Answer") != std::string::npos);
    CHECK(md.find("### `mask`") != std::string::npos);
    CHECK(md.find("the softmax of row") != std::string::npos);
    CHECK(md.find("### Task 3: the weights, row by row") != std::string::npos);
    CHECK(md.find("\n$$\n") != std::string::npos);  // explain's display maths, as GitHub, pandoc and KaTeX read it
    CHECK(md.find("```math") == std::string::npos);
    CHECK(write_exercise("causal", 2, Format::markdown, ExercisePart::both, MathStyle::github).find("```math\n") != std::string::npos);
    const std::string tex = write_exercise("softmax", 2, Format::latex);
    CHECK(tex.find("\\begin{enumerate}") != std::string::npos);
    CHECK(tex.find("\\begin{array}{r|") != std::string::npos);  // each matrix labelled with its tokens
    CHECK(tex.find("\\frac{") != std::string::npos);
    CHECK(write_exercise("scale", 0, Format::markdown).find("Without the scale") != std::string::npos);
    CHECK(write_exercise("cost", 0, Format::markdown).find("```") != std::string::npos);
}

namespace {

// The worksheet's givens: from the "Given:" line to the "Compute:" line.
std::string givens_of(const std::string& document) {
    const auto from = document.find("Given:"), to = document.find("Compute:");
    REQUIRE(from != std::string::npos);
    REQUIRE(to != std::string::npos);
    return document.substr(from, to - from);
}

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

}  // namespace

TEST_CASE("every given matrix is printed whole in every format, one block per head when it holds several") {
    // User test: gqa's Q (2, 16) was shown as | 0 | 1 | 2 | 3 | 4 | … | 13 | 14 | 15 |.
    for (const auto& topic : exercise_topics())
        for (std::uint64_t seed : {0, 3}) {
            INFO("topic " << topic << ", seed " << seed);
            CHECK(givens_of(write_exercise(topic, seed, Format::markdown)).find("…") == std::string::npos);
            CHECK(givens_of(write_exercise(topic, seed, Format::text)).find("…") == std::string::npos);
            const std::string tex = givens_of(write_exercise(topic, seed, Format::latex));
            CHECK(tex.find("\\cdots") == std::string::npos);
            CHECK(tex.find("\\dots") == std::string::npos);
        }
    const std::string md = write_exercise("gqa", 0, Format::markdown);
    const Problem problem = parse_problem(write_exercise("gqa", 0, Format::json), "gqa.json");
    const std::string given = givens_of(md);
    for (int h = 0; h < problem.heads; ++h) {
        INFO("head " << h);
        CHECK(given.find(fmt::format("### `Q` given, columns {}–{} ({}, {}), head {}", h * problem.d_k, (h + 1) * problem.d_k - 1, problem.n,
                                     problem.d_k, h)) != std::string::npos);
    }
    // Every number of Q appears: 4 blocks of n rows, each row d_k cells.
    CHECK(count(given, "### `Q`") == static_cast<std::size_t>(problem.heads));
    CHECK(count(given, "### `K`") == static_cast<std::size_t>(problem.kv_heads));
}

TEST_CASE("the gqa answer counts the cache as H_kv · (d_k + d_v), the count decode reports") {
    // User test: the answer said 2 · H_kv · d_k = 16 against 32, but d_v = 2 there.
    for (std::uint64_t seed = 0; seed < 10; ++seed) {
        INFO("seed " << seed);
        const Problem problem = parse_problem(write_exercise("gqa", seed, Format::json), "gqa.json");
        const std::size_t shared = static_cast<std::size_t>(problem.kv_heads) * (problem.d_k + problem.d_v);
        const std::size_t unshared = static_cast<std::size_t>(problem.heads) * (problem.d_k + problem.d_v);
        REQUIRE(problem.d_v != problem.d_k);  // otherwise 2 · H_kv · d_k would pass too
        for (Format format : {Format::markdown, Format::text}) {
            const std::string answer = write_exercise("gqa", seed, format);
            CHECK(answer.find(fmt::format("= {} numbers per token and layer", shared)) != std::string::npos);
            CHECK(answer.find(fmt::format("= {} with one KV head per query head", unshared)) != std::string::npos);
        }
    }
}

TEST_CASE("every topic has d_k = 4, as --help says, so the scale is exactly 1/2") {
    for (const auto& topic : exercise_topics())
        for (std::uint64_t seed : {0, 1, 2}) {
            INFO("topic " << topic << ", seed " << seed);
            const Problem problem = parse_problem(write_exercise(topic, seed, Format::json), "exercise.json");
            CHECK(problem.d_k == 4);
            CHECK(problem.scale_factor() == 0.5);
        }
}

TEST_CASE("text is a format for the terminal: aligned tables, no Markdown or LaTeX markup") {
    const std::string text = write_exercise("softmax", 1, Format::text);
    CHECK(text.find("Answer\n------") != std::string::npos);
    CHECK(text.find("###") == std::string::npos);
    CHECK(text.find("\\begin") == std::string::npos);
    CHECK(text.find("| ") == std::string::npos);
    CHECK(text.find("weights") != std::string::npos);
}

TEST_CASE("Markdown escapes labels such as <pad>, LaTeX has no raw Unicode") {
    for (std::uint64_t seed = 0; seed < 5; ++seed) {
        INFO("seed " << seed);
        const std::string md = write_exercise("padding", seed, Format::markdown);
        CHECK(md.find("\\<pad\\>") != std::string::npos);
        // The exercise's own text; the arithmetic section is explain's Markdown.
        const std::string own = md.substr(0, md.find("## The arithmetic"));
        CHECK(!std::regex_search(own, std::regex("[^\\\\]<pad")));
        for (const auto& topic : exercise_topics()) {
            INFO("topic " << topic);
            const std::string tex = write_exercise(topic, seed, Format::latex);
            CHECK(std::find_if(tex.begin(), tex.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; }) == tex.end());
        }
    }
}

TEST_CASE("unknown topics and formats are input errors") {
    CHECK_THROWS_AS(write_exercise("attention", 0, Format::markdown), InputError);
    CHECK_THROWS_AS(write_exercise("scores", 0, Format::csv), InputError);
}

namespace {

// The expected values of an exercise that are not whole numbers, as its answer tables
// print them (4 decimals, sign aside), from the JSON answer. Whole numbers and masked
// cells are left out: a table of whole numbers prints "2", as the givens do.
std::vector<std::string> answer_numbers(const std::string& topic, std::uint64_t seed) {
    std::vector<std::string> numbers;
    for (const auto& e : parse_problem(write_exercise(topic, seed, Format::json), "exercise.json").expect)
        for (double x : e.data.data())
            if (std::isfinite(x) && x != std::round(x)) numbers.push_back(fmt::format("{:.4f}", std::abs(x)));
    return numbers;
}

// The "#"/"=" heading lines of a sheet, in order: the exercises' numbering as a reader sees it.
std::vector<std::string> exercise_headings(const std::string& sheet) {
    std::vector<std::string> headings;
    static const std::regex heading(R"((?:^|\n)(?:# |\\section\*\{|<h1>)?(Exercise [0-9]+: [^\n]*?\(topic [a-z-]+, seed [0-9]+\)))");
    for (auto it = std::sregex_iterator(sheet.begin(), sheet.end(), heading); it != std::sregex_iterator(); ++it) headings.push_back((*it)[1]);
    return headings;
}

}  // namespace

TEST_CASE("worksheets: the questions hold no answer value, the key is the rest of the exercise") {
    for (const auto& topic : exercise_topics())
        for (std::uint64_t seed : {0, 4}) {
            const std::vector<std::string> numbers = answer_numbers(topic, seed);
            REQUIRE_FALSE(numbers.empty());
            for (Format format : {Format::text, Format::markdown, Format::latex, Format::html}) {
                INFO("topic " << topic << ", seed " << seed << ", " << format);
                // LaTeX sets each document ragged right in a group: the pieces are compared without its end.
                const auto body = [format](std::string document) {
                    const std::string end = "\\par}\n";
                    if (format == Format::latex && document.ends_with(end)) document.resize(document.size() - end.size());
                    return document;
                };
                const std::string questions = body(write_exercise(topic, seed, format, ExercisePart::questions));
                const std::string answers = body(write_exercise(topic, seed, format, ExercisePart::answers));
                CHECK(questions.find("Compute:") != std::string::npos);
                CHECK(questions.find("Answer") == std::string::npos);
                CHECK(answers.find("Compute:") == std::string::npos);
                for (const auto& number : numbers) {
                    INFO("expected value " << number);
                    CHECK(questions.find(number) == std::string::npos);
                    CHECK(answers.find(number) != std::string::npos);  // the needle is what the answer prints
                }
                CHECK(exercise_headings(questions) == exercise_headings(answers));
                REQUIRE(exercise_headings(questions).size() == 1);
                if (format == Format::html) continue;  // a page of both hides its answers; checked below
                // both = the questions, then the answer; the key = the heading, then that same answer.
                const std::string both = body(write_exercise(topic, seed, format));
                REQUIRE(both.rfind(questions, 0) == 0);
                const std::string answer = both.substr(questions.size());
                REQUIRE(answers.size() > answer.size());
                CHECK(answers.substr(answers.size() - answer.size()) == answer);
                CHECK(questions.rfind(answers.substr(0, answers.size() - answer.size()), 0) == 0);
            }
        }
    // A page of both parts hides each part of the answer behind a button; the key shows it.
    CHECK(count(write_exercise("softmax", 1, Format::html), "<details class=\"answer\">") == 4);  // one a task
    CHECK(count(write_exercise("softmax", 1, Format::html, ExercisePart::answers), "<details") == 0);
    CHECK(count(write_exercise("softmax", 1, Format::html, ExercisePart::questions), "<details") == 0);
}

TEST_CASE("worksheets: --count N numbers 1..N, cycling the topics and counting the seed up") {
    const Worksheet sheet{{"softmax", "causal"}, 5, 3, ExercisePart::both};
    for (Format format : {Format::text, Format::markdown, Format::latex}) {
        INFO(format);
        const std::string written = write_worksheet(sheet, format);
        // Each exercise is the one its topic and seed write alone, numbered by its place.
        std::string expected;
        const std::vector<std::pair<std::string, int>> exercises = {{"softmax", 5}, {"causal", 6}, {"softmax", 7}};
        for (std::size_t k = 0; k < exercises.size(); ++k) {
            std::string alone = write_exercise(exercises[k].first, static_cast<std::uint64_t>(exercises[k].second), format);
            const std::string one = "Exercise 1: ", numbered = fmt::format("Exercise {}: ", k + 1);
            alone.replace(alone.find(one), one.size(), numbered);
            if (format == Format::latex) alone = alone.substr(alone.find('\n') + 1, alone.rfind("\\par}") - alone.find('\n') - 1);
            // Text and Markdown part an exercise from the one before with a blank line; a sheet's first starts on its first line.
            else if (k > 0) alone = "\n" + alone;
            expected += alone;
        }
        // LaTeX: the sheet is one ragged-right group around the exercises, not one each.
        if (format == Format::latex) expected = "{\\raggedright\n" + expected + "\\par}\n";
        CHECK(written == expected);
        const std::vector<std::string> headings = exercise_headings(written);
        REQUIRE(headings.size() == 3);
        CHECK(headings[0] == "Exercise 1: Softmax row by row, then the weighted sum (topic softmax, seed 5)");
        CHECK(headings[1] == "Exercise 2: The causal mask (topic causal, seed 6)");
        CHECK(headings[2] == "Exercise 3: Softmax row by row, then the weighted sum (topic softmax, seed 7)");
        for (ExercisePart part : {ExercisePart::questions, ExercisePart::answers})
            CHECK(exercise_headings(write_worksheet({sheet.topics, sheet.seed, sheet.count, part}, format)) == headings);
    }
    const std::string page = write_worksheet({{"gqa", "grad"}, 0, 3, ExercisePart::questions}, Format::html);
    CHECK(page.find("<title>Exercises 1–3: gqa, grad (seeds 0–2) — questions</title>") != std::string::npos);
    CHECK(exercise_headings(page).size() == 3);
}

TEST_CASE("worksheets: JSON questions are the problems without expect, the key passes check") {
    const nlohmann::json one = nlohmann::json::parse(write_exercise("causal", 2, Format::json, ExercisePart::questions));
    CHECK_FALSE(one.contains("expect"));
    CHECK(one.at("Q") == nlohmann::json::parse(write_exercise("causal", 2, Format::json)).at("Q"));
    CHECK(parse_problem(one.dump(), "questions.json").expect.empty());
    const Worksheet sheet{{"kv-cache", "mla", "cost"}, 9, 4, ExercisePart::questions};
    const nlohmann::json questions = nlohmann::json::parse(write_worksheet(sheet, Format::json));
    const nlohmann::json answers = nlohmann::json::parse(write_worksheet({sheet.topics, sheet.seed, sheet.count, ExercisePart::answers}, Format::json));
    REQUIRE(questions.is_array());
    REQUIRE(questions.size() == 4);
    REQUIRE(answers.size() == 4);
    for (std::size_t k = 0; k < 4; ++k) {
        INFO("exercise " << k + 1);
        CHECK_FALSE(questions[k].contains("expect"));
        nlohmann::json without = answers[k];
        without.erase("expect");
        CHECK(questions[k] == without);
        CHECK(answers[k] == nlohmann::json::parse(write_exercise(sheet.topics[k % 3], 9 + k, Format::json)));
        CHECK(check_expectations(parse_problem(answers[k].dump(), "key.json"), CheckOptions{}).passed());
    }
    CHECK(write_worksheet({{"scores"}, 1, 1, ExercisePart::answers}, Format::json) == write_exercise("scores", 1, Format::json));
}

TEST_CASE("worksheets: a part, a topic list or a count outside the set is an input error naming the nearest") {
    CHECK(exercise_part("questions") == ExercisePart::questions);
    CHECK(exercise_part("answers") == ExercisePart::answers);
    CHECK(exercise_part("both") == ExercisePart::both);
    CHECK_THROWS_WITH(exercise_part("question"), Catch::Matchers::Contains("'question' (did you mean 'questions'?): expected one of questions, answers, both"));
    CHECK_THROWS_WITH(write_worksheet({{"softmax", "casual"}, 0, 2, ExercisePart::both}, Format::text),
                      Catch::Matchers::Contains("'casual' (did you mean 'causal'?)"));
    CHECK_THROWS_AS(write_worksheet({{}, 0, 1, ExercisePart::both}, Format::text), InputError);
    CHECK_THROWS_WITH(write_worksheet({{"softmax"}, 0, 0, ExercisePart::both}, Format::text), Catch::Matchers::Contains("0: a sheet holds at least 1 exercise"));
}

TEST_CASE("every topic's key answers each numbered task under its number (docs/COMMANDS.md#exercise)") {
    // A lecturer's find: the key was laid out by steps, so "3. check that every row adds up
    // to 1" had no answer of its own.
    const std::regex task(R"(^(\d+)\. )"), answered(R"(^Task (\d+): )");
    for (const auto& topic : exercise_topics())
        for (std::uint64_t seed : {0, 1, 2}) {
            INFO("topic " << topic << ", seed " << seed);
            const std::string questions = write_exercise(topic, seed, Format::text, ExercisePart::questions);
            const std::string key = write_exercise(topic, seed, Format::text, ExercisePart::answers);
            std::vector<std::string> asked, keyed;
            std::istringstream q(questions), k(key);
            std::smatch match;
            for (std::string line; std::getline(q, line);)
                if (std::regex_search(line, match, task)) asked.push_back(line.substr(match[0].length()));
            for (std::string line; std::getline(k, line);)
                if (std::regex_search(line, match, answered)) keyed.push_back(line.substr(match[0].length()));
            REQUIRE(asked.size() >= 2);
            CHECK(keyed == asked);  // every task, in order, under its number and its words
            // Each task's answer holds something: the text between its heading and the next.
            for (std::size_t n = 1; n <= asked.size(); ++n) {
                const auto from = key.find(fmt::format("Task {}: ", n));
                const auto to = n < asked.size() ? key.find(fmt::format("Task {}: ", n + 1)) : key.size();
                const std::string answer = key.substr(from, to - from);
                INFO("task " << n << ": " << answer);
                CHECK(answer.find_first_not_of(" \n", answer.find('\n')) != std::string::npos);
                CHECK(std::count(answer.begin(), answer.end(), '\n') >= 3);
            }
        }
}
