#pragma once
// Typed errors, each carrying the exit code the CLI returns for it (SPEC §2):
// 1 a check failed, 2 bad input or usage, 3 a requested backend is unavailable.
#include <exception>
#include <iosfwd>
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

// What the CLI does with an exception that reached it: writes one line to `out`
// and returns the exit code. An Error carries its own code; running out of memory
// is 2 (the problem is too large); anything else, of any type, is a bug in
// attn-trace: 4 with "internal error" (SPEC §2 v2), never an abort.
int report_error(std::exception_ptr error, std::ostream& out);

}  // namespace attn_trace
