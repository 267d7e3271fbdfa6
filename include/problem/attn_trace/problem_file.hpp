#pragma once
// Writing a problem file (docs/PROBLEM.md#the-problem-file) for people to read and edit:
// what `random --literal` and `exercise --format json` print.
#include <string>

#include <nlohmann/json.hpp>

namespace attn_trace {

// One top-level key per line with its value compact, except that a matrix gets
// one row per line and `expect` one entry per line.
std::string problem_file_text(const nlohmann::ordered_json& file);

}  // namespace attn_trace
