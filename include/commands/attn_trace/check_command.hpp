#pragma once
// `check` as a function (docs/COMMANDS.md#check): every file checked, each one's result
// or the error that stopped it, and the report the CLI prints.
#include <optional>
#include <string>
#include <vector>

#include "attn_trace/check.hpp"
#include "attn_trace/trace_budget.hpp"

namespace attn_trace {

struct CheckRequest {
    std::vector<std::string> files;
    std::string golden;  // a trace written by `run --format json` ("" for none): one file only
    // The backend, the tolerances, decode's and tiled's options, and with a golden the
    // settings that replace its own (overrides.dtype applies to any file).
    CheckOptions options;
    bool allow_nonfinite = false;
    Budget budget;
};

// One file's outcome: its result, or the error that made it bad input (exit 2).
struct CheckedFile {
    std::string file;
    std::optional<CheckResult> result;
    std::string error;  // the message, its settings marked; "" when the file was checked
    double seconds = 0;  // how long it took, reading included
};

struct CheckReport {
    std::vector<CheckedFile> files;
    std::size_t passed() const;
    std::size_t failed() const;  // failed checks and bad files
    // 0 every file passed, 1 a check failed, 2 a file is bad input (docs/COMMANDS.md#exit-codes).
    int exit_code() const;
};

// Checks every file in turn; a backend that is not available stops the whole command
// (BackendUnavailable), any other error marks that file bad and goes on. `each`, when
// given, is called with each file's outcome as soon as it is known (the CLI prints as it goes).
CheckReport check_command(const CheckRequest& request, const std::function<void(const CheckedFile&)>& each = {});

// What the CLI prints on standard output for one file (its notes, PASS, FAIL with the
// differing values, or ERROR; the error itself goes to standard error) and the closing line.
std::string render_checked_file(const CheckedFile& checked);
std::string render_check_closing(const CheckReport& report);  // "N passed, N failed"

// The same report for machines (docs/COMMANDS.md#checks-that-ci-reads): one JSON object;
// JUnit XML (one testcase a file, failures + errors = the text's failed); GitHub Actions'
// workflow commands (::error for a failed or bad file, ::warning for a note) and the
// closing line.
std::string render_check_json(const CheckReport& report);
std::string render_check_junit(const CheckReport& report);
std::string render_check_github(const CheckReport& report);

}  // namespace attn_trace
