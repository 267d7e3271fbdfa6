#include "overflow.hpp"

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

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

// The first value of the file's inputs that the dtype cannot hold (|x| > largest; inf where
// a half type's inputs were already rounded, the file's own being finite): the overflow
// is then the file's, not a computation's.
struct InputPast {
    std::string name;
    std::size_t row, col;
    double value;
};
std::optional<InputPast> first_input_past(const Problem& p, Dtype dtype, const std::string& command) {
    // f32 rounds to its largest number up to half an ulp past it (3.4028235e38 is fine);
    // a half type's inputs arrive rounded already, inf where they were past.
    const auto past = [&](double x) { return std::isinf(x) || (dtype == Dtype::f32 && std::isinf(static_cast<float>(x))); };
    std::vector<std::pair<std::string, const Matrix*>> matrices;
    const auto batch = [&](const char* name, const std::vector<Matrix>& items) {
        for (std::size_t b = 0; b < items.size(); ++b) matrices.emplace_back(items.size() > 1 ? fmt::format("{} (batch {})", name, b) : name, &items[b]);
    };
    batch("X", p.X);
    batch("X_source", p.X_source);
    if (command == "grad") batch("d_out", p.d_out);  // read by grad only
    const std::pair<const char*, const std::optional<Matrix>*> named[] = {{"W_Q", &p.W_Q}, {"W_K", &p.W_K}, {"W_V", &p.W_V}, {"W_O", &p.W_O},
                                                                         {"Q", &p.Q},     {"K", &p.K},     {"V", &p.V}};
    for (const auto& [name, m] : named)
        if (*m) matrices.emplace_back(name, &**m);
    if (p.mla) {
        const std::pair<const char*, const Matrix*> mla[] = {{"mla.W_DKV", &p.mla->W_DKV}, {"mla.W_UK", &p.mla->W_UK}, {"mla.W_UV", &p.mla->W_UV}};
        for (const auto& [name, m] : mla) matrices.emplace_back(name, m);
        const std::pair<const char*, const std::optional<Matrix>*> optional[] = {
            {"mla.W_DQ", &p.mla->W_DQ}, {"mla.W_UQ", &p.mla->W_UQ}, {"mla.W_QR", &p.mla->W_QR}, {"mla.W_KR", &p.mla->W_KR}};
        for (const auto& [name, m] : optional)
            if (*m) matrices.emplace_back(name, &**m);
    }
    for (const auto& [name, m] : matrices)
        for (std::size_t i = 0; i < m->rows(); ++i)
            for (std::size_t j = 0; j < m->cols(); ++j)
                if (past((*m)(i, j))) return InputPast{name, i, j, (*m)(i, j)};
    const std::pair<const char*, const std::optional<std::vector<double>>*> biases[] = {{"b_Q", &p.b_Q}, {"b_K", &p.b_K}, {"b_V", &p.b_V}, {"b_O", &p.b_O}};
    for (const auto& [name, b] : biases)
        if (*b)
            for (std::size_t j = 0; j < (*b)->size(); ++j)
                if (past((**b)[j])) return InputPast{name, 0, j, (**b)[j]};
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
    // An input past the dtype's range was never computed: the note names it, not the step it reached.
    const auto input = first_input_past(p, dtype, trace.command);
    const Note note{NoteKind::overflow,
                    {{"row", static_cast<double>(input ? input->row : found->row)}, {"col", static_cast<double>(input ? input->col : found->col)}, {"limit", largest}},
                    {{"step", input ? input->name : step_label(*found->step)}, {"value", input ? (std::isfinite(input->value) ? fmt::format("{:g}", input->value) : "") : nonfinite_name(found->value)},
                     {"dtype", dtype_name(dtype)}, {"cause", input ? "input" : "computed"}}};
    // A half type overflows as the hardware would, and that is what its trace is for
    // (docs/PROBLEM.md#dtype-half-precision): traced and noted, not refused.
    if (p.allow_nonfinite || is_half(dtype)) {
        trace.notes.push_back(note);
        return;
    }
    throw InputError(fmt::format("{}: overflow: {}. Scale the inputs (or the scale) down, or add \"allow_nonfinite\": true to trace it", p.file, overflow_text(note)));
}

}  // namespace attn_trace
