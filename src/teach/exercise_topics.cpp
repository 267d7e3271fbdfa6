// What every exercise topic shares: the hand-sized numbers, the Q/K/V and trace lookups
// the plans are built from (exercise_topics_parts.hpp), and plan_exercise, which picks
// a topic's plan by name (the plans: exercise_topics_core.cpp, exercise_topics_family.cpp).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attn_trace/errors.hpp"
#include "attn_trace/exercise.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/render_table.hpp"
#include "attn_trace/nearest_word.hpp"
#include "exercise_topics_parts.hpp"

namespace attn_trace {

namespace {

const std::vector<std::string> word_pool = {"the", "cat", "sat", "on", "mat", "a", "dog", "ran", "home", "late", "my", "card",
                                            "was", "charged", "twice", "please", "fix", "it", "now", "order", "arrived", "broken"};

}  // namespace

namespace topic_plans {

ExercisePlan qkv_plan(std::string title, HandNumbers& numbers, std::size_t n, std::size_t m, int heads, int kv_heads,
                      const std::vector<double>& queries, const std::vector<double>& keys) {
    ExercisePlan plan;
    plan.title = std::move(title);
    plan.problem["tokens"] = numbers.words(std::max(n, m));
    if (n != m) {
        // Keys beyond the queries get their own labels (the loader labels keys only when m = n).
        plan.problem["source_tokens"] = plan.problem["tokens"];
        plan.problem["tokens"].erase(plan.problem["tokens"].begin() + static_cast<long>(n), plan.problem["tokens"].end());
    }
    plan.problem["Q"] = numbers.matrix(n, static_cast<std::size_t>(heads) * d_k, queries);
    plan.problem["K"] = numbers.matrix(m, static_cast<std::size_t>(kv_heads) * d_k, keys);
    plan.problem["V"] = numbers.matrix(m, static_cast<std::size_t>(kv_heads) * d_v, value_values);
    if (heads > 1) plan.problem["heads"] = heads;
    if (kv_heads != heads) plan.problem["kv_heads"] = kv_heads;
    return plan;
}

double trace_number(const Trace& trace, const std::string& name) {
    for (const auto& [key, value] : trace.numbers)
        if (key == name) return value;
    throw std::logic_error("exercise: the trace has no number " + name);
}

std::vector<std::string> trace_notes(const Trace& trace, NoteKind kind) {
    std::vector<std::string> out;
    for (const Note* note : trace.notes_of(kind)) out.push_back(note_text(*note));
    return out;
}

AnswerNotes row_sums(StepName name) {
    return [name](const Problem&, const Trace& trace) {
        std::vector<std::string> sentences;
        for (const Step& step : trace.steps) {
            if (step.name != name) continue;
            std::vector<std::string> rows;
            for (std::size_t i = 0; i < step.values.rows(); ++i) {
                std::vector<std::string> terms;
                double sum = 0;
                for (std::size_t j = 0; j < step.values.cols(); ++j) {
                    terms.push_back(format_rounded(step.values(i, j), 4));
                    sum += step.values(i, j);
                }
                rows.push_back(fmt::format("row {} ({}) {} = {}", i, row_label(step, i), fmt::join(terms, " + "), format_rounded(sum, 4)));
            }
            sentences.push_back(fmt::format("The rows of {}{} add up as follows: {}. (Each sum is of the exact values; the rounded terms can miss it by "
                                            "a unit or two in the last decimal.)",
                                            step_name(step.name), step.head && trace.problem.heads > 1 ? fmt::format(" (head {})", *step.head) : "", fmt::join(rows, "; ")));
        }
        if (sentences.empty()) throw std::logic_error(fmt::format("exercise: the trace has no {} step to add up", step_name(name)));
        return sentences;
    };
}

std::string cell(std::size_t i, std::size_t j) { return fmt::format("scores[{},{}]", i, j); }
std::string row(StepName step, std::size_t i) { return fmt::format("{}[{}]", step, i); }

}  // namespace topic_plans

nlohmann::ordered_json HandNumbers::matrix(std::size_t rows, std::size_t cols, const std::vector<double>& values) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < rows; ++i) {
        std::vector<double> row;
        do {
            row.clear();
            for (std::size_t j = 0; j < cols; ++j) row.push_back(pick(values));
        } while (std::all_of(row.begin(), row.end(), [](double x) { return x == 0; }) && cols > 1);
        nlohmann::ordered_json json_row = nlohmann::ordered_json::array();
        // Whole numbers as integers, so the file reads 2 rather than 2.0.
        for (double x : row) x == std::floor(x) ? json_row.push_back(static_cast<std::int64_t>(x)) : json_row.push_back(x);
        out.push_back(std::move(json_row));
    }
    return out;
}

std::vector<std::string> HandNumbers::words(std::size_t n) {
    std::vector<std::string> pool = word_pool, out;
    for (std::size_t k = 0; k < n; ++k) {
        const auto at = static_cast<std::size_t>(integer(0, static_cast<std::int64_t>(pool.size()) - 1));
        out.push_back(pool[at]);
        pool.erase(pool.begin() + static_cast<long>(at));
    }
    return out;
}

ExercisePlan plan_exercise(const std::string& topic, HandNumbers& numbers) {
    static const std::map<std::string, topic_plans::TopicPlanner> planners = [] {
        std::map<std::string, topic_plans::TopicPlanner> all = topic_plans::core_topics();
        all.merge(topic_plans::family_topics());
        return all;
    }();
    const auto planner = planners.find(topic);
    if (planner == planners.end()) throw InputError(fmt::format("⟦topic⟧ '{}'{}: expected one of {}", topic, did_you_mean(topic, exercise_topics()), fmt::join(exercise_topics(), ", ")));
    return planner->second(numbers);
}

}  // namespace attn_trace
