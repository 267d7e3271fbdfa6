#include "attn_trace/step_table.hpp"

#include <ostream>

namespace attn_trace {

const std::vector<StepInfo>& step_table() {
    static const std::vector<StepInfo> table = {
#define ATTN_TRACE_STEP_INFO(name, symbol, latex, formula, shape, commands) {StepName::name, #name, symbol, latex, formula, shape, commands},
        ATTN_TRACE_STEPS(ATTN_TRACE_STEP_INFO)
#undef ATTN_TRACE_STEP_INFO
    };
    return table;
}

const StepInfo& step_info(StepName step) { return step_table().at(static_cast<std::size_t>(step)); }

std::optional<StepName> find_step(std::string_view name) {
    for (const auto& info : step_table())
        if (info.commands && info.name == name) return info.id;
    return std::nullopt;
}

const std::vector<std::string>& step_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> all;
        for (const auto& info : step_table())
            if (info.commands) all.emplace_back(info.name);
        return all;
    }();
    return names;
}

std::string defined_as(std::string_view symbol, std::string_view formula) {
    if (symbol.empty() || formula.empty()) return std::string(symbol.empty() ? formula : symbol);
    return std::string(symbol) + (formula.front() == '(' ? " " : " = ") + std::string(formula);
}

bool is_grad_step(StepName step) { return (step_info(step).commands & by_grad) != 0; }

std::ostream& operator<<(std::ostream& out, StepName step) { return out << step_name(step); }

bool is_gradient(StepName step) {
    return is_grad_step(step) && step != StepName::jacobian && step != StepName::lse && step != StepName::delta && step != StepName::p;
}

}  // namespace attn_trace
