#include "attn_trace/cli_words.hpp"

#include <algorithm>

namespace attn_trace {

std::string cli_flag(const std::string& setting) {
    std::string flag = setting;
    std::replace(flag.begin(), flag.end(), '_', '-');
    return std::string(2, '-') + flag;
}

std::string cli_words(const std::string& text) { return word_options(text, cli_flag); }

std::string cli_message(const Error& error) { return cli_words(error.marked()); }

}  // namespace attn_trace
