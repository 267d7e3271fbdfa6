// Fuzz target 3: what `check` reads besides the problem. The input is read as a
// golden trace (run --format json) and compared with a fixed small problem; and as
// a problem whose `expect` entries are checked against its own trace.
#include <cstddef>
#include <cstdint>
#include <string>

#include "attn_trace/check.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/problem.hpp"
#include "fuzz_limits.hpp"

namespace {

using namespace attn_trace;

// Three tokens, two heads, a causal mask: small, but with every step a golden
// trace can name (per-head steps, concat and final).
const Problem& golden_problem() {
    static const Problem problem = parse_problem(R"({"heads": 2, "mask": "causal",
      "X": [[1, 0, 0, 1], [0, 1, 0, 0], [0, 0, 1, 0]],
      "W_Q": [[0.5, 0.5], [0, 0], [1, 0], [0, 1]], "W_K": [[1, 0], [0, 0.5], [0, 2], [0, 0]],
      "W_V": [[1, 0], [0, 0], [0, 1], [1, 0]], "W_O": [[1, 0], [0, 1]]})", "fuzz-problem.json");
    return problem;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        (void)check_golden(golden_problem(), parse_golden_trace(text, "fuzz-golden.json"), CheckOptions{});
    } catch (const Error&) {
    }
    try {
        const Problem problem = parse_problem(text, "fuzz.json", fuzz::allow_nonfinite(text));
        if (fuzz::small_enough(problem) && !problem.expect.empty()) (void)check_expectations(problem, CheckOptions{});
    } catch (const Error&) {
    }
    return 0;
}
