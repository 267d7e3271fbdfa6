#include "attn_trace/problem_overrides.hpp"

#include <fmt/format.h>

#include "attn_trace/errors.hpp"

namespace attn_trace {

void apply_overrides(Problem& problem, const ProblemOverrides& o) {
    if (o.mask) replace_masks(problem, parse_mask_option(*o.mask, problem.n, problem.m, "⟦mask⟧"), MaskOrigin::option);
    if (o.scale && !problem.model.empty())
        throw InputError(fmt::format("⟦scale⟧ {}: the scale of a model's layer is what its config.json decides ({}); leave ⟦scale⟧ out", *o.scale,
                                     problem.file));
    if (o.scale) problem.scale = parse_scale(*o.scale, "⟦scale⟧");
    if (o.train) {
        if (!problem.dropout)
            throw InputError(fmt::format("{} {}: the problem has no dropout to switch (add \"dropout\": {{\"p\": 0.1, \"seed\": 0}})",
                                         *o.train ? "⟦train⟧" : "⟦eval⟧", problem.file));
        problem.dropout->train = *o.train;
    }
    if (o.empty_rows) problem.empty_rows = parse_empty_rows(*o.empty_rows, "⟦empty_rows⟧");
    if (o.dtype) problem.dtype = parse_dtype(*o.dtype, "⟦dtype⟧");
    // A mask from an option must fit the problem like one from the file.
    if (!o.mask) return;
    try {
        validate_masks(problem);
    } catch (const InputError& error) {
        throw InputError(fmt::format("⟦mask⟧ {}: {}", *o.mask, error.marked()));
    }
}

}  // namespace attn_trace
