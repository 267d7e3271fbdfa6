#pragma once
// The CLI's one catch: every exception becomes one line and an exit code.
#include <exception>
#include <iosfwd>
#include <string>

namespace attn_trace::cli {

// Writes one line to `out` and returns the exit code. An Error carries its own
// code, and its settings are worded as this CLI's flags; running out of memory is
// 2 (the problem is too large); anything else, of any type, is a bug in
// attn-trace: 4 with "internal error" (docs/COMMANDS.md#exit-codes), never an abort.
int report_error(std::exception_ptr error, std::ostream& out);

}  // namespace attn_trace::cli
