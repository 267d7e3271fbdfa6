#pragma once
// The one spelling of numbers that every output shares (docs/README.md#conventions):
// a non-finite value is "nan", "inf" or "-inf" (JSON has no infinity, and the problem
// reader reads these strings back), a finite one in full, round-trip precision.
#include <cmath>
#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace attn_trace {

inline const char* nonfinite_name(double x) { return std::isnan(x) ? "nan" : (x < 0 ? "-inf" : "inf"); }

inline std::string full_precision_text(double x) { return std::isfinite(x) ? fmt::format("{}", x) : nonfinite_name(x); }

// A count with its thousands grouped, for the cost reports and byte counts: 1050624 -> "1,050,624".
inline std::string grouped(std::uint64_t value) {
    std::string digits = std::to_string(value), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

// A whole count grouped as above, anything else to one decimal: "1,536", "0.5".
inline std::string grouped(double value) {
    return value == std::floor(value) && value < 1.8e19 ? grouped(static_cast<std::uint64_t>(value)) : fmt::format("{:.1f}", value);
}

}  // namespace attn_trace
