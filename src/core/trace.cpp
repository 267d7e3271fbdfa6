#include "attn_trace/trace.hpp"

namespace attn_trace {

const Step* Trace::find(const std::string& name, std::optional<int> head, std::optional<int> batch, std::optional<int> t,
                        std::optional<std::array<int, 2>> tile) const {
    for (const auto& step : steps) {
        if (step.name != name) continue;
        // An entry without `head` means head 0 (SPEC §9); likewise batch 0.
        if (step.head.has_value() && step.head.value_or(0) != head.value_or(0)) continue;
        if (!step.head.has_value() && head.has_value() && *head != 0) continue;
        if (step.batch.value_or(0) != batch.value_or(0)) continue;
        if (step.t != t) continue;
        if (step.tile != tile) continue;
        return &step;
    }
    return nullptr;
}

}  // namespace attn_trace
