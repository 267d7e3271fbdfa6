#pragma once
// What the topic plans (exercise_topics_core.cpp, exercise_topics_family.cpp) are built
// from, and the topics each of those files plans; exercise_topics.cpp defines the pieces.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "attn_trace/trace.hpp"
#include "exercise_plan.hpp"

namespace attn_trace::topic_plans {

// Queries and keys have d_k = 4 in every topic, so the scale is exactly 1/2 and every
// scaled score is a whole number or a half. Counts (cache sizes, FLOPs, parameters)
// come from compute_cost and pipeline_decode, the functions behind `cost` and `decode`,
// never from a formula written in a plan.
inline const std::vector<double> query_values = {-1, 0, 1, 2};
inline const std::vector<double> key_values = {-1, 0, 1};
inline const std::vector<double> value_values = {0, 1, 2, 3};
inline constexpr std::size_t d_k = 4, d_v = 2;

// A plan with its title and, in its problem, the token labels, Q (n, heads·d_k),
// K and V (m, kv_heads·d_k / ·d_v).
ExercisePlan qkv_plan(std::string title, HandNumbers& numbers, std::size_t n, std::size_t m, int heads = 1, int kv_heads = 1,
                      const std::vector<double>& queries = query_values, const std::vector<double>& keys = key_values);

// A number the pipeline reported (trace.numbers); a missing one is a bug here, not bad input.
double trace_number(const Trace& trace, const std::string& name);

// The trace's own notes of one kind (how query heads share KV heads, ...), as the trace prints them.
std::vector<std::string> trace_notes(const Trace& trace, NoteKind kind);

// Each row of a step added up, one sentence a head: "Rows of weights: row 0 (broken)
// 0.4519 + 0.2741 + 0.2741 = 1; …", the terms as the key writes them, the sum computed.
AnswerNotes row_sums(StepName step);

// The cell "scores[i,j]" and the row "step[i]", as a plan names what it works out.
std::string cell(std::size_t i, std::size_t j);
std::string row(StepName step, std::size_t i);

// Each file's topics by name: exercise_topics_core.cpp (version 1), exercise_topics_family.cpp (version 2).
using TopicPlanner = ExercisePlan (*)(HandNumbers&);
std::map<std::string, TopicPlanner> core_topics();
std::map<std::string, TopicPlanner> family_topics();

}  // namespace attn_trace::topic_plans
