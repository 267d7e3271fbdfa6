#include "attn_trace/number_text.hpp"

#include <cmath>

#include <fmt/format.h>

namespace attn_trace {

const char* nonfinite_name(double x) { return std::isnan(x) ? "nan" : (x < 0 ? "-inf" : "inf"); }

std::string full_precision_text(double x) { return std::isfinite(x) ? fmt::format("{}", x) : nonfinite_name(x); }

std::string grouped(std::uint64_t value) {
    std::string digits = std::to_string(value), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string grouped(double value) {
    return value == std::floor(value) && value < 1.8e19 ? grouped(static_cast<std::uint64_t>(value)) : fmt::format("{:.1f}", value);
}

}  // namespace attn_trace
