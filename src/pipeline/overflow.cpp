#include "overflow.hpp"

#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "attn_trace/number_text.hpp"
#include "attn_trace/errors.hpp"

namespace attn_trace {

namespace {

bool minus_infinity_allowed(const std::string& command, StepName step) {
    using enum StepName;
    if (step == mask || step == masked || step == row_max || step == m || step == lse) return true;  // lse: log 0 for a row that reads no key
    return step == scores && command != "run";
}

// Under the nan policy a row that reads no key has NaN weights, and in grad every gradient
// that reads them (docs/COMMANDS.md#grad) carries them on.
bool nan_allowed(const Problem& p, const std::string& command, StepName step) {
    return p.empty_rows == EmptyRows::nan &&
           (command == "grad" || step == StepName::weights || step == StepName::out || step == StepName::concat || step == StepName::final);
}

struct Unexplained {
    const Step* step;
    std::size_t row, col;
    double value;
};

std::optional<Unexplained> first_unexplained(const Trace& trace, const Problem& p) {
    for (const Step& s : trace.steps) {
        if (s.name == StepName::reach) continue;  // inf there means "never", not an overflow
        const bool minus_inf_ok = minus_infinity_allowed(trace.command, s.name), nan_ok = nan_allowed(p, trace.command, s.name);
        const auto& data = s.values.data();
        for (std::size_t i = 0; i < data.size(); ++i) {
            const double x = data[i];
            if (std::isfinite(x) || (std::isnan(x) && nan_ok) || (x < 0 && std::isinf(x) && minus_inf_ok)) continue;
            return Unexplained{&s, i / s.values.cols(), i % s.values.cols(), x};
        }
    }
    return std::nullopt;
}

}  // namespace

void check_overflow(Trace& trace, const Problem& p, Dtype dtype) {
    if (!p.first_nonfinite.empty()) return;
    const auto found = first_unexplained(trace, p);
    if (!found) return;
    double largest = std::numeric_limits<double>::max();
    if (dtype == Dtype::f32) largest = std::numeric_limits<float>::max();
    if (dtype == Dtype::f16) largest = 65504.0;
    if (dtype == Dtype::bf16) largest = 0x1.fep127;
    const Note note{NoteKind::overflow,
                    {{"row", static_cast<double>(found->row)}, {"col", static_cast<double>(found->col)}, {"limit", largest}},
                    {{"step", step_label(*found->step)}, {"value", nonfinite_name(found->value)},
                     {"dtype", dtype_name(dtype)}}};
    // A half type overflows as the hardware would, and that is what its trace is for
    // (docs/PROBLEM.md#dtype-half-precision): traced and noted, not refused.
    if (p.allow_nonfinite || is_half(dtype)) {
        trace.notes.push_back(note);
        return;
    }
    throw InputError(fmt::format("{}: overflow: {}. Scale the inputs (or the scale) down, or add \"allow_nonfinite\": true to trace it", p.file, overflow_text(note)));
}

}  // namespace attn_trace
