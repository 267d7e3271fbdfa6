#pragma once
// decode and tiled keep every step of every query (or tile) and run the full
// computation beside them to measure the difference: refuse, before allocating,
// a problem whose trace would not fit, rather than swapping or being killed.
#include <string>

#include "attn_trace/problem.hpp"

namespace attn_trace::cli {

// The most bytes a kept trace may hold: well inside this project's 24 GiB machines,
// with room for the renderers' copies.
inline constexpr double trace_budget_bytes = 4.0 * (1 << 30);

// Throws InputError when `bytes` (the command's own estimate) passes the budget.
void refuse_over_budget(const Problem& problem, const std::string& command, double bytes);

// Reads a whole-number option given as signed so that "-1" gets a clear message,
// not a conversion error: throws InputError unless minimum <= value.
std::size_t whole_number_option(const std::string& name, long long value, long long minimum);

}  // namespace attn_trace::cli
