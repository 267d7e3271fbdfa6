#pragma once
// Typed errors, each carrying the exit code the CLI returns for it (SPEC §2):
// 1 a check failed, 2 bad input or usage, 3 a requested backend is unavailable.
#include <stdexcept>
#include <string>

namespace attn_trace {

class Error : public std::runtime_error {
public:
    Error(const std::string& message, int exit_code)
        : std::runtime_error(message), exit_code_(exit_code) {}
    int exit_code() const { return exit_code_; }

private:
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
