#pragma once
// Typed errors, each carrying the exit code the CLI returns for it (docs/COMMANDS.md#exit-codes):
// 1 a check failed, 2 bad input or usage, 3 a requested backend is unavailable.
//
// The library names no command-line flag. Where a message speaks of a setting its
// caller chose, it marks the setting's name, "⟦block_q⟧ 0: ...": what() reads
// "block_q 0: ...", and the CLI words the same message with its own flag,
// "--block-q 0: ..." (cli/report_error.cpp).
#include <functional>
#include <stdexcept>
#include <string>

namespace attn_trace {

// `text` with every marked setting replaced by word(name).
std::string word_options(const std::string& text, const std::function<std::string(const std::string&)>& word);

class Error : public std::runtime_error {
public:
    Error(const std::string& message, int exit_code)
        : std::runtime_error(word_options(message, [](const std::string& name) { return name; })), marked_(message), exit_code_(exit_code) {}
    int exit_code() const { return exit_code_; }
    // The message with its settings still marked, for a caller to word them.
    const std::string& marked() const { return marked_; }

private:
    std::string marked_;
    int exit_code_;
};

// Bad input: a problem file, an option value, a request that cannot be met.
class InputError : public Error {
public:
    explicit InputError(const std::string& message) : Error(message, 2) {}
};

// A JSON value at a known path in a known file was not what was expected.
// Message: "FILE: $.PATH: WHAT".
class JsonPathError : public InputError {
public:
    JsonPathError(const std::string& file, const std::string& path, const std::string& what)
        : InputError(file + ": " + path + ": " + what) {}
};

class BackendUnavailable : public Error {
public:
    explicit BackendUnavailable(const std::string& message) : Error(message, 3) {}
};

}  // namespace attn_trace
