#pragma once
// The one reading of a comma-separated list written by hand: --steps, a mask's
// padding:1,1,0, --perm (docs/ARCHITECTURE.md#one-place-each). Every separator ends
// an item, so an empty item ("1,,0", "1,0,") reaches the caller, which refuses it by
// name, and "" is one empty item; a caller for which "" means no list asks first.
#include <string>
#include <string_view>
#include <vector>

namespace attn_trace {

// "2,0,1" -> {"2", "0", "1"}; "1,,0" -> {"1", "", "0"}; "1," -> {"1", ""}; "" -> {""}.
inline std::vector<std::string> split_list(std::string_view text, char separator) {
    std::vector<std::string> items;
    std::size_t start = 0;
    for (std::size_t end = text.find(separator); end != std::string_view::npos; end = text.find(separator, start)) {
        items.emplace_back(text.substr(start, end - start));
        start = end + 1;
    }
    items.emplace_back(text.substr(start));
    return items;
}

}  // namespace attn_trace
