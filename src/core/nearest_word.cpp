#include "attn_trace/nearest_word.hpp"

#include <algorithm>
#include <cctype>

namespace attn_trace {

namespace {

// Levenshtein distance, case-insensitive, one row at a time.
std::size_t edit_distance(const std::string& word, const std::string& candidate) {
    std::vector<std::size_t> row(candidate.size() + 1);
    for (std::size_t j = 0; j <= candidate.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= word.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= candidate.size(); ++j) {
            const std::size_t above = row[j];
            const bool same = std::tolower(word[i - 1]) == std::tolower(candidate[j - 1]);
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
            diagonal = above;
        }
    }
    return row.back();
}

}  // namespace

std::vector<std::string> nearest_words(const std::string& word, const std::vector<std::string>& known, std::size_t count) {
    std::vector<std::pair<std::size_t, std::string>> ranked;
    for (const auto& candidate : known) ranked.emplace_back(edit_distance(word, candidate), candidate);
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> out;
    for (std::size_t i = 0; i < ranked.size() && i < count; ++i) out.push_back(ranked[i].second);
    return out;
}

std::string nearest_word(const std::string& word, const std::vector<std::string>& known) {
    const auto best = nearest_words(word, known, 1);
    // Suggest only what is plausibly a misspelling.
    return !best.empty() && edit_distance(word, best[0]) <= std::max<std::size_t>(2, word.size() / 3) ? best[0] : "";
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& known) {
    const std::string near = nearest_word(word, known);
    return near.empty() ? "" : " (did you mean '" + near + "'?)";
}

}  // namespace attn_trace
