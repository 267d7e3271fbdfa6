#pragma once
// The words every front shows for a marked setting (attn_trace/errors.hpp): the CLI's
// option, ⟦max_memory⟧ → --max-memory. The Python package shows the same messages and
// notes as the CLI (docs/PYTHON.md#errors), so the wording lives here, once.
#include <string>

#include "attn_trace/errors.hpp"

namespace attn_trace {

std::string cli_flag(const std::string& setting);
// `text` with every marked setting worded as its flag.
std::string cli_words(const std::string& text);
// The error's message as the CLI prints it after "attn-trace: error: ".
std::string cli_message(const Error& error);

}  // namespace attn_trace
