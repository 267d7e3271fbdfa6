#pragma once
// The options that set a command's budget (attn_trace/trace_budget.hpp), and whole
// numbers read so that "-1" gets a clear message.
#include <string>

#include <CLI/CLI.hpp>

#include "attn_trace/trace_budget.hpp"

namespace attn_trace::cli {

// --max-memory SIZE (every command that computes a trace) and --max-output SIZE
// (those that print one); SIZE as 4G, 512M, 1000000 (bytes).
// `refused` names what is refused past the budget, as "a problem whose trace".
void add_memory_option(CLI::App& command, Budget& budget, const std::string& refused = "a problem whose trace");
void add_output_option(CLI::App& command, Budget& budget);

// Reads a whole-number option given as signed so that "-1" gets a clear message,
// not a conversion error: throws InputError unless minimum <= value.
std::size_t whole_number_option(const std::string& name, long long value, long long minimum);

}  // namespace attn_trace::cli
