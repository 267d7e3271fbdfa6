#pragma once
// Parsing JSON text (a problem file, a golden trace) into a document, with every
// failure an InputError naming the file, the line and the column.
#include <string>

#include <nlohmann/json.hpp>

namespace attn_trace {

// Throws InputError "FILE: malformed JSON at line L, column C: REASON".
nlohmann::json parse_json_text(const std::string& text, const std::string& file);

}  // namespace attn_trace
