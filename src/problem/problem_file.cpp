#include "attn_trace/problem_file.hpp"

#include <vector>

#include <fmt/format.h>

namespace attn_trace {

namespace {

// An array of arrays of scalars: a matrix written as nested arrays.
bool is_matrix(const nlohmann::ordered_json& value) {
    if (!value.is_array() || value.size() < 2) return false;
    for (const auto& row : value)
        if (!row.is_array() || row.empty() || row[0].is_array()) return false;
    return true;
}

// [ first item, then each further item on its own line, indented under the first ]
std::string one_per_line(const nlohmann::ordered_json& items, const std::string& indent) {
    std::vector<std::string> lines;
    for (const auto& item : items) lines.push_back(item.dump());
    return fmt::format("[\n{}{}\n{}]", indent + "  ", fmt::join(lines, ",\n" + indent + "  "), indent);
}

}  // namespace

std::string problem_file_text(const nlohmann::ordered_json& file) {
    std::vector<std::string> lines;
    for (const auto& [key, value] : file.items()) {
        const bool rows = key == "expect" ? value.is_array() && !value.empty() : is_matrix(value);
        lines.push_back(fmt::format(" {}: {}", nlohmann::ordered_json(key).dump(), rows ? one_per_line(value, " ") : value.dump()));
    }
    return fmt::format("{{\n{}\n}}\n", fmt::join(lines, ",\n"));
}

}  // namespace attn_trace
