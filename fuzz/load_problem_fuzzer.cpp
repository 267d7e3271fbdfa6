// Fuzz target 1: the problem loader, from bytes. Every input must end in a
// Problem or an attn_trace::Error (exit 2 in the CLI); any other exception, a
// sanitizer report, a time-out or a large allocation is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "attn_trace/errors.hpp"
#include "attn_trace/problem.hpp"
#include "fuzz_limits.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        (void)attn_trace::parse_problem(text, "fuzz.json", attn_trace::fuzz::allow_nonfinite(text));
    } catch (const attn_trace::Error&) {
        // bad input, reported: the expected outcome for most mutants
    }
    return 0;
}
