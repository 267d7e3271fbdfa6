#include "json_text.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"

namespace attn_trace {
namespace {

using json = nlohmann::json;

std::string line_and_column(const std::string& text, std::size_t byte) {
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
        if (text[i] == '\n') {
            ++line;
            column = 1;
        } else {
            ++column;
        }
    }
    return fmt::format("line {}, column {}", line, column);
}

// nlohmann's text starts "[json.exception.parse_error.101] parse error at line 1,
// column 5: ..."; the position is said by us, so only the reason is kept.
std::string reason_of(const json::exception& error) {
    std::string reason = error.what();
    const auto tag_end = reason.find("] ");
    if (tag_end != std::string::npos) reason = reason.substr(tag_end + 2);
    const auto colon = reason.find(": ", reason.find("parse error"));
    if (reason.starts_with("parse error") && colon != std::string::npos) reason = reason.substr(colon + 2);
    return reason;
}

// A number past double's range (1e400) is not a syntax error to nlohmann::json:
// json::parse throws out_of_range.406 without a position. Its SAX parser reports
// the same failure with the position, so the text is read again with a handler
// that only records where the number starts.
class FailurePosition : public nlohmann::json_sax<json> {
public:
    std::size_t byte = 0;
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return true; }
    bool key(string_t&) override { return true; }
    bool end_object() override { return true; }
    bool start_array(std::size_t) override { return true; }
    bool end_array() override { return true; }
    bool parse_error(std::size_t position, const std::string& last_token, const json::exception&) override {
        byte = position + 1 - std::min(position, last_token.size());  // the number's first character
        return false;
    }
};

// The deepest nesting any attn-trace document needs is 5 (a golden trace's
// {"steps": [{"data": [[…]]}]}). Walking a value is recursive here and in
// nlohmann::json, so a file of a million "[" would overflow the stack: it is
// refused first, by a scan of the brackets outside strings.
constexpr int max_nesting = 64;

void check_nesting(const std::string& text, const std::string& file) {
    int depth = 0;
    bool in_string = false, escaped = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_nesting)
                throw InputError(fmt::format("{}: malformed JSON at {}: nested more than {} levels deep", file,
                                             line_and_column(text, i + 1), max_nesting));
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
}

// nlohmann::json keeps the last of two equal keys in an object. A file that gives a key
// twice (two "scale"s) says two things, and attn-trace would silently pick one, so the
// parse is followed by its callback, which keeps the JSON path of where it is.
class DuplicateKeys {
public:
    explicit DuplicateKeys(const std::string& file) : file_(file) {}

    bool operator()(int, json::parse_event_t event, const json& parsed) {
        using E = json::parse_event_t;
        switch (event) {
            case E::object_start:
            case E::array_start:
                open_.push_back(Level{event == E::object_start, {}, "", 0});
                break;
            case E::key: {  // `parsed` is the key
                Level& level = open_.back();
                const std::string& key = parsed.get_ref<const std::string&>();
                if (std::find(level.keys.begin(), level.keys.end(), key) != level.keys.end())
                    throw InputError(fmt::format("{}: {}: the key \"{}\" is given twice in one object: give it once", file_, path(), key));
                level.keys.push_back(key);
                level.key = key;
                break;
            }
            case E::object_end:
            case E::array_end:
                open_.pop_back();
                [[fallthrough]];
            case E::value:
                if (!open_.empty() && !open_.back().object) ++open_.back().index;
                break;
        }
        return true;
    }

private:
    struct Level {
        bool object;
        std::vector<std::string> keys;
        std::string key;
        std::size_t index;
    };

    std::string path() const {
        std::string p = "$";
        for (std::size_t i = 0; i + 1 < open_.size(); ++i)
            p += open_[i].object ? "." + open_[i].key : fmt::format("[{}]", open_[i].index);
        return p;
    }

    const std::string& file_;
    std::vector<Level> open_;
};

}  // namespace

namespace {

// Python's json.dumps writes -Infinity, Infinity and NaN, which JSON has not: where one
// stands at the error, the spellings the problem format reads.
std::string nonstandard_number_hint(const std::string& text, std::size_t byte) {
    const std::size_t from = byte > 12 ? byte - 12 : 0;
    const std::string near = text.substr(from, 24);
    if (near.find("Infinity") == std::string::npos && near.find("NaN") == std::string::npos) return "";
    return "; JSON has no -Infinity, Infinity or NaN (Python's json.dumps writes them): write the strings \"-inf\", \"inf\" and \"nan\", which "
           "attn-trace reads (json.dumps(..., allow_nan=False) finds them before they are written)";
}

}  // namespace

json parse_json_text(const std::string& text, const std::string& file) {
    check_nesting(text, file);
    try {
        DuplicateKeys duplicates(file);
        return json::parse(text, [&duplicates](int depth, json::parse_event_t event, json& parsed) { return duplicates(depth, event, parsed); });
    } catch (const json::parse_error& error) {
        throw InputError(fmt::format("{}: malformed JSON at {}: {}{}", file, line_and_column(text, error.byte), reason_of(error),
                                     nonstandard_number_hint(text, error.byte)));
    } catch (const json::out_of_range& error) {
        FailurePosition failure;
        json::sax_parse(text, &failure);
        throw InputError(fmt::format("{}: malformed JSON at {}: {} (out of the range of a double)", file,
                                     line_and_column(text, failure.byte), reason_of(error)));
    }
}

std::string read_text_file(const std::string& path, const std::string& what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(fmt::format("{}: cannot open {} (does it exist and is it readable?)", path, what));
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

json read_json_file(const std::string& path, const std::string& what) { return parse_json_text(read_text_file(path, what), path); }

}  // namespace attn_trace
