#pragma once
// The one spelling of numbers that every output shares (docs/README.md#conventions):
// a non-finite value is "nan", "inf" or "-inf" (JSON has no infinity, and the problem
// reader reads these strings back), a finite one in full, round-trip precision.
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace attn_trace {

const char* nonfinite_name(double x);
std::string full_precision_text(double x);

// A count with its thousands grouped, for the cost reports and byte counts: 1050624 -> "1,050,624".
std::string grouped(std::uint64_t value);
// A whole count grouped as above, anything else to one decimal: "1,536", "0.5".
std::string grouped(double value);

// A count or measure for JSON: a whole number as an integer (66, not 66.0), anything
// else as the double, nan and inf by their names (docs/COMMANDS.md#output-formats).
nlohmann::json json_quantity(double value);
// A matrix cell or a measured error for JSON: the double as it is, nan and inf by
// their names (JSON has no infinity; the problem reader reads the names back).
nlohmann::json number_json(double x);

}  // namespace attn_trace
