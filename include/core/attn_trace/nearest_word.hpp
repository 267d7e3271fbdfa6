#pragma once
// Suggestions for a mistyped word of a closed set (docs/README.md#conventions): a JSON
// key, a mask, a step, a topic, an option or its value.
#include <cstddef>
#include <string>
#include <vector>

namespace attn_trace {

// The nearest of `known` to `word` by edit distance (case aside), or "" when nothing
// is close enough to be a misspelling.
std::string nearest_word(const std::string& word, const std::vector<std::string>& known);
// The `count` entries of `known` nearest to `word` by edit distance, nearest first, however far.
std::vector<std::string> nearest_words(const std::string& word, const std::vector<std::string>& known, std::size_t count);
// " (did you mean 'X'?)" for the nearest word, or "" when nothing is close: the tail of
// a command-line error.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& known);

}  // namespace attn_trace
