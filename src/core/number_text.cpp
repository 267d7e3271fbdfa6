#include "attn_trace/number_text.hpp"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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

nlohmann::json json_quantity(double value) {
    if (!std::isfinite(value)) return nonfinite_name(value);
    if (value == std::floor(value) && std::fabs(value) < 9007199254740992.0) return static_cast<std::int64_t>(value);  // below 2^53: exact
    return value;
}

nlohmann::json number_json(double x) {
    if (!std::isfinite(x)) return nonfinite_name(x);
    return x;
}

}  // namespace attn_trace
