#pragma once
// What a topic decides (the problem, which steps are asked for, the prose);
// exercise.cpp does the rest the same way for every topic: computes the trace,
// fills `expect`, writes the question and the worked answer.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn_trace/explain.hpp"
#include "attn_trace/problem.hpp"
#include "attn_trace/random.hpp"
#include "attn_trace/trace.hpp"

namespace attn_trace {

struct WorkedArithmetic {
    std::string spec;  // "weights[1]" (a row) or "scores[0,2]" (a cell)
    int head = 0;
};

// Sentences of the answer that state numbers. They are written once the trace is
// computed, from the trace and from the functions `cost` and `decode` use, never
// from a formula of their own, so that an answer cannot disagree with the tool.
using AnswerNotes = std::function<std::vector<std::string>(const Problem&, const Trace&)>;

// One numbered task of the question, and what the key writes under the same number
// (docs/COMMANDS.md#exercise): every task is answered by at least one of these.
struct ExerciseTask {
    std::string text;                       // as the question lists it
    std::vector<StepName> steps;            // the steps that answer it: the trace's, else the full run's
    bool unscaled_weights = false;          // also the weights without 1/√d_k
    std::vector<WorkedArithmetic> worked;   // explained on the full (run) trace
    std::vector<std::string> notes;         // paragraphs of prose (no counts)
    AnswerNotes computed_notes;             // paragraphs that state numbers
    std::string preformatted;               // a block printed as is (cost tables)

    bool answered() const { return !steps.empty() || unscaled_weights || !worked.empty() || !notes.empty() || computed_notes || !preformatted.empty(); }
};

struct ExercisePlan {
    std::string title;
    nlohmann::ordered_json problem;          // the problem file, without title and expect
    std::string pipeline = "run";            // run, decode or tiled: what `check` will run
    std::vector<StepName> expect_steps;   // every head / t / tile of these goes in expect
    std::string question;
    std::vector<ExerciseTask> tasks;

    // A new task, last of the list; the reference is good until the next one is added.
    ExerciseTask& task(std::string text, std::vector<StepName> steps = {}) {
        tasks.push_back(ExerciseTask{std::move(text), std::move(steps), false, {}, {}, {}, {}});
        return tasks.back();
    }
};

// The problem's full run with s = 1 (what the scale exercise compares with): the weights
// as softmax(S) itself. Each use runs it again, uncached: the problems are a few tokens.
Trace unscaled_trace(const Problem& problem);

// Small integers drawn from the portable generator.
class HandNumbers {
public:
    explicit HandNumbers(std::uint64_t seed) : random_(seed) {}
    std::int64_t integer(std::int64_t low, std::int64_t high) { return random_.integer(low, high); }
    template <typename T>
    const T& pick(const std::vector<T>& choices) {
        return choices[static_cast<std::size_t>(random_.integer(0, static_cast<std::int64_t>(choices.size()) - 1))];
    }
    // rows × cols drawn from `values`; no row all zero (a zero query reads every key alike,
    // which is worth one exercise, not half of them).
    nlohmann::ordered_json matrix(std::size_t rows, std::size_t cols, const std::vector<double>& values);
    // n different words for the tokens.
    std::vector<std::string> words(std::size_t n);

private:
    PortableRandom random_;
};

ExercisePlan plan_exercise(const std::string& topic, HandNumbers& numbers);

}  // namespace attn_trace
