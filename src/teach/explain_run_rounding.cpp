// A half type's one rounding of the explained cell (docs/PROBLEM.md#dtype-half-precision):
// each step is computed in f32 from the stored values before it and rounded to the type
// once, so the cell's explanation ends with that rounding: the f32 value, recomputed here
// from the operands the explanation showed, in the rounding model's order; the value the
// type stores (the trace's); and how far the rounding moved it. f64 and f32 store what
// they compute and get no such line.
#include <cmath>

#include <fmt/format.h>

#include "attn_trace/render.hpp"
#include "explain_run_explainer.hpp"

namespace attn_trace {

float RunExplainer::stored(double x) const { return static_cast<float>(round_to(dtype(), x)); }

float RunExplainer::f32_dot(const std::vector<double>& a, const std::vector<double>& b, std::optional<double> bias) const {
    // In index order, as the CPU backend's product accumulates; the bias is added to the
    // f32 sum before the one rounding, as addmm does.
    float sum = 0;
    for (std::size_t t = 0; t < a.size(); ++t) sum += stored(a[t]) * stored(b[t]);
    return bias ? sum + stored(*bias) : sum;
}

void RunExplainer::close_with_rounding(ExplainDocument& d, const std::function<float()>& f32_value) const {
    if (!is_half(dtype())) return;
    const float computed = f32_value();
    // -inf (a hidden key) or NaN: the rounding leaves it as it is, so there is nothing to show.
    if (!std::isfinite(computed)) return;
    d.lines.push_back(rounding_line(computed, at(target_.step, i_, j())));
}

namespace {

// x with `digits` significant digits: "0.20373654", "1.2207031e-05".
std::string significant(double x, int digits) { return fmt::format("{:.{}g}", x, digits); }

}  // namespace

std::array<std::string, 2> RunExplainer::distinct_numbers(double x, double y) const {
    const int decimals = n_.precision();
    if (x == y || format_rounded(x, decimals) != format_rounded(y, decimals) || !std::isfinite(y)) return {format_rounded(x, decimals), format_rounded(y, decimals)};
    // Rounded to the explanation's decimals they would read the same: 8 significant digits
    // tell an f32 value from its half neighbour, 9 tell any two floats apart.
    const int digits = significant(x, 8) != significant(y, 8) ? 8 : 9;
    return {significant(x, digits), significant(y, digits)};
}

ExplainLine RunExplainer::rounding_line(float f32_value, double stored_value) const {
    const std::string type = dtype_name(dtype());
    const auto math = [&](const std::string& text) { return n_.latex() ? latex_number(text) : text; };
    const auto [x, y] = distinct_numbers(f32_value, stored_value);
    const std::string values = fmt::format("{} = {}{}{}{}{}", n_.sub(step_name(target_.step), index(i_, j())), math(x), n_.words(" (f32)"),
                                           n_.latex() ? " \\to " : " → ", math(y), n_.words(" (" + type + ")"));
    if (!std::isfinite(stored_value))
        return {fmt::format("the one rounding to {}: computed in f32 the cell is past {}'s largest finite value, so {} stores it as {} (an overflow)", type,
                            type, type, y),
                values};
    const double moved = stored_value - static_cast<double>(f32_value);  // exact: both are floats
    if (moved == 0) return {fmt::format("the one rounding to {}: computed in f32 the cell is a value {} has, so it is stored exactly", type, type), values};
    return {fmt::format("the one rounding to {}: the cell computed in f32, then as {} stores it (the trace's value), and how far the rounding moved it",
                        type, type),
            fmt::format("{},  {} - {} = {}", values, math(y), x.front() == '-' ? "(" + math(x) + ")" : math(x), math(significant(moved, 3)))};
}

}  // namespace attn_trace
