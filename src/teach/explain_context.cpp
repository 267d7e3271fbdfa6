#include "explain_context.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"

namespace attn_trace {

const Step* ExplainContext::find_step(StepName name, std::optional<int> head, std::optional<int> t,
                                      std::optional<std::array<int, 2>> tile) const {
    return trace_.find(name, head, p_.batched ? std::optional<int>(options_.batch) : std::nullopt, t, tile);
}

std::vector<StepName> ExplainContext::step_names() const {
    // In the trace's canonical order, whatever order the pipeline recorded them in.
    std::vector<StepName> names;
    for (const auto& info : step_table())
        for (const Step& step : trace_.steps)
            if (step.name == info.id) {
                names.push_back(info.id);
                break;
            }
    return names;
}

void ExplainContext::no_step(const std::string& why) const {
    throw InputError(fmt::format("'{}': {}; this problem's {} trace has: {} (decode's with ⟦t⟧ T: k_cache, v_cache, masked, weights, out; "
                                 "tiled's with ⟦tile⟧ QB,KT: masked, m, l, u, rescale)",
                                 target_.spec, why, trace_.command, fmt::join(step_names(), ", ")));
}

void ExplainContext::check_head_and_batch() const {
    if (options_.head < 0 || options_.head >= p_.heads)
        throw InputError(fmt::format("⟦head⟧ {}: the problem has {} head{} (0 to {})", options_.head, p_.heads, p_.heads == 1 ? "" : "s", p_.heads - 1));
    checked_batch(p_, options_);
}

std::size_t checked_batch(const Problem& problem, const ExplainOptions& options) {
    if (options.batch < 0 || static_cast<std::size_t>(options.batch) >= problem.batch)
        throw InputError(fmt::format("⟦batch⟧ {}: the problem has {} sequence{} (0 to {})", options.batch, problem.batch, problem.batch == 1 ? "" : "s",
                                     problem.batch - 1));
    return static_cast<std::size_t>(options.batch);
}

void ExplainContext::check_row(std::size_t rows, const std::string& what) const {
    if (target_.row >= rows)
        throw InputError(fmt::format("'{}': row {} is out of range: {} has {} row{} (0 to {}; indices are 0-based)", target_.spec, target_.row, what,
                                     rows, rows == 1 ? "" : "s", rows - 1));
}

void ExplainContext::check_column(const Step& step) const {
    if (target_.column && *target_.column >= step.values.cols())
        throw InputError(fmt::format("'{}': column {} is out of range: {} has {} column{} (0 to {}; indices are 0-based)", target_.spec,
                                     *target_.column, step.name, step.values.cols(), step.values.cols() == 1 ? "" : "s", step.values.cols() - 1));
}

std::string ExplainContext::where() const {
    std::string out = fmt::format("head {}", options_.head);
    if (p_.batched) out += fmt::format(", batch {}", options_.batch);
    return out;
}

std::string ExplainContext::index(std::size_t i, std::size_t j) const {
    return i >= 10 || j >= 10 ? fmt::format("{},{}", i, j) : fmt::format("{}{}", i, j);
}

std::string ExplainContext::footnote() const {
    return fmt::format("every number rounded to {} decimals; each result is the computed value, so a last digit may differ from the rounded terms",
                       options_.precision);
}

ExplainDocument ExplainContext::finish(ExplainDocument d) const {
    d.footnote = footnote();
    return d;
}

std::string ExplainContext::quoted_label(const std::vector<std::string>& labels, std::size_t i) {
    return i < labels.size() ? fmt::format(" (\"{}\")", labels[i]) : "";
}

std::vector<std::string> ExplainContext::elided(std::size_t count, const std::function<std::string(std::size_t)>& part) const {
    std::vector<std::string> parts;
    const bool all = count <= 16;
    for (std::size_t j = 0; j < count; ++j) {
        if (!all && j == 12) {
            parts.push_back(n_.ellipsis());
            j = count - 5;
            continue;
        }
        parts.push_back(part(j));
    }
    return parts;
}

std::string ExplainContext::softmax_quotient(const std::string& A, const std::string& z_name, const std::string& max_name,
                                             const std::string& sum_name, double z, double max, double e, double sum, double weight) const {
    const std::string total = n_.number(sum);
    return n_.terms({A, n_.fraction(n_.exp(z_name + " - " + max_name), sum_name), n_.fraction(n_.exp(n_.number(z) + " - " + n_.factor(max)), total),
                     n_.fraction(n_.exp(n_.number(z - max)), total), n_.fraction(n_.number(e), total), n_.number(weight)},
                    " = ", 3);
}

}  // namespace attn_trace
