#pragma once
// CLI11's parse errors in the form every error of attn-trace has
// (docs/COMMANDS.md#exit-codes): "attn-trace: error: WHAT", with the nearest valid
// option or value where the mistake looks like a misspelling, then the command's usage line.
#include <string>

#include <CLI/CLI.hpp>

namespace attn_trace::cli {

std::string usage_error_text(const CLI::ParseError& error, const CLI::App& app);

}  // namespace attn_trace::cli
