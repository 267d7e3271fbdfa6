#include "trace_budget.hpp"

#include <fmt/format.h>

#include "attn_trace/errors.hpp"

namespace attn_trace::cli {

void refuse_over_budget(const Problem& p, const std::string& command, double bytes) {
    if (bytes <= trace_budget_bytes) return;
    throw InputError(fmt::format("{}: the {} trace of n = {} queries × m = {} keys × {} head{} would hold about {:.1f} GiB; the limit is "
                                 "{:.0f} GiB. Try a smaller problem, or `attn-trace run` (which takes the fast path when the trace is too large).",
                                 p.file, command, p.n, p.m, p.heads, p.heads == 1 ? "" : "s", bytes / (1 << 30), trace_budget_bytes / (1 << 30)));
}

std::size_t whole_number_option(const std::string& name, long long value, long long minimum) {
    if (value < minimum) throw InputError(fmt::format("{} {}: expected a whole number of at least {}", name, value, minimum));
    return static_cast<std::size_t>(value);
}

}  // namespace attn_trace::cli
