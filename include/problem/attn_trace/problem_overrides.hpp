#pragma once
// The settings a command's options replace over what the problem file says
// (docs/COMMANDS.md#options-shared-by-run-decode-and-tiled), applied in one place for
// every command and front: run, decode, tiled, grad, explain, permute, precision and
// `check --golden` over a golden's recorded settings.
#include <optional>
#include <string>

#include "attn_trace/problem.hpp"

namespace attn_trace {

struct ProblemOverrides {
    // A mask as ⟦mask⟧ takes it (a string form, JSON, or "none"): it replaces the file's
    // masks and always combines with a model's own (docs/PROBLEM.md#masks).
    std::optional<std::string> mask;
    std::optional<std::string> scale;       // auto, none or a number; refused for a model's layer
    std::optional<std::string> empty_rows;  // error, zero or nan
    std::optional<std::string> dtype;       // f64, f32, f16 or bf16
    std::optional<bool> train;              // dropout's mode: true ⟦train⟧, false ⟦eval⟧
    bool any() const { return mask || scale || empty_rows || dtype || train; }
};

// Applies every override that is set, then checks the masks against n and m again.
// Errors are InputErrors that mark the setting (⟦mask⟧ …), for each front to word.
void apply_overrides(Problem& problem, const ProblemOverrides& overrides);

}  // namespace attn_trace
