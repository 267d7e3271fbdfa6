#pragma once
// The one spelling of numbers that every output shares (docs/README.md#conventions):
// a non-finite value is "nan", "inf" or "-inf" (JSON has no infinity, and the problem
// reader reads these strings back), a finite one in full, round-trip precision.
#include <cmath>
#include <string>

#include <fmt/format.h>

namespace attn_trace {

inline const char* nonfinite_name(double x) { return std::isnan(x) ? "nan" : (x < 0 ? "-inf" : "inf"); }

inline std::string full_precision_text(double x) { return std::isfinite(x) ? fmt::format("{}", x) : nonfinite_name(x); }

}  // namespace attn_trace
