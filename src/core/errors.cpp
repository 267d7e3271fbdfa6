#include "attn_trace/errors.hpp"

#include <string_view>

namespace attn_trace {

namespace {
constexpr std::string_view open_mark = "⟦", close_mark = "⟧";
}

std::string word_options(const std::string& text, const std::function<std::string(const std::string&)>& word) {
    std::string out;
    std::size_t at = 0;
    while (true) {
        const std::size_t open = text.find(open_mark, at);
        const std::size_t close = open == std::string::npos ? open : text.find(close_mark, open);
        if (close == std::string::npos) return out + text.substr(at);
        out += text.substr(at, open - at) + word(text.substr(open + open_mark.size(), close - open - open_mark.size()));
        at = close + close_mark.size();
    }
}

}  // namespace attn_trace
