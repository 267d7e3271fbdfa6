#pragma once
// Parsing JSON text (a problem file, a golden trace) into a document, with every
// failure an InputError naming the file, the line and the column.
#include <string>

#include <nlohmann/json.hpp>

namespace attn_trace {

// Throws InputError "FILE: malformed JSON at line L, column C: REASON".
nlohmann::json parse_json_text(const std::string& text, const std::string& file);
// The text of a file (`what` names it in the error when it cannot be opened), parsed as above.
std::string read_text_file(const std::string& path, const std::string& what);
nlohmann::json read_json_file(const std::string& path, const std::string& what);

}  // namespace attn_trace
