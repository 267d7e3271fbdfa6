#include "attn_trace/trace.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace attn_trace {

std::vector<PlacePart> step_place(std::optional<int> head, std::optional<int> batch, std::optional<int> t, std::optional<std::array<int, 2>> tile) {
    std::vector<PlacePart> parts;
    if (batch) parts.push_back({"batch", std::to_string(*batch)});
    if (head) parts.push_back({"head", std::to_string(*head)});
    if (t) parts.push_back({"t", std::to_string(*t)});
    if (tile) parts.push_back({"tile", fmt::format("[{}, {}]", (*tile)[0], (*tile)[1])});
    return parts;
}

bool per_kv_head(StepName name) {
    return name == StepName::k_cache || name == StepName::v_cache || name == StepName::grad_k || name == StepName::grad_v;
}

std::vector<PlacePart> step_place(const Step& step) {
    auto parts = step_place(step.head, step.batch, step.t, step.tile);
    // A cache or grad_k of "head 1" read as query head 1 would be wrong under GQA
    // (docs/COMMANDS.md#decode): it is KV head 1.
    if (per_kv_head(step.name))
        for (auto& part : parts)
            if (part.key == "head") part.key = "KV head";
    return parts;
}

std::string placed_name(const std::string& name, const std::vector<PlacePart>& place) {
    std::vector<std::string> where;
    for (const auto& part : place) where.push_back(part.key + " " + part.value);
    return where.empty() ? name : fmt::format("{} ({})", name, fmt::join(where, ", "));
}

std::string step_label(StepName name, std::optional<int> head, std::optional<int> batch, std::optional<int> t,
                       std::optional<std::array<int, 2>> tile) {
    return placed_name(step_name(name), step_place(head, batch, t, tile));
}

const Step* Trace::find(StepName name, std::optional<int> head, std::optional<int> batch, std::optional<int> t,
                        std::optional<std::array<int, 2>> tile) const {
    for (const auto& step : steps) {
        if (step.name != name) continue;
        // An entry without `head` means head 0
        // (docs/PROBLEM.md#expect-values-for-attn-trace-check); likewise batch 0.
        if (step.head.has_value() && step.head.value_or(0) != head.value_or(0)) continue;
        if (!step.head.has_value() && head.has_value() && *head != 0) continue;
        if (step.batch.value_or(0) != batch.value_or(0)) continue;
        if (step.t != t) continue;
        if (step.tile != tile) continue;
        return &step;
    }
    return nullptr;
}

std::optional<CellLoss> Step::loss_at(std::size_t row, std::size_t column) const {
    const auto at = std::lower_bound(lost_cells.begin(), lost_cells.end(), std::pair{row, column},
                                     [](const LostCell& cell, const auto& place) { return std::pair{cell.row, cell.column} < place; });
    if (at == lost_cells.end() || at->row != row || at->column != column) return std::nullopt;
    return at->loss;
}

double Note::number(const std::string& key) const { return numbers.at(key); }
const std::string& Note::word(const std::string& key) const { return words.at(key); }

std::string overflow_text(const Note& note) {
    const bool input = note.words.count("cause") && note.word("cause") == "input";
    return fmt::format("{}[{}, {}] {} {}'s range (±{:.3g}){}", note.word("step"), static_cast<long long>(note.number("row")), static_cast<long long>(note.number("col")),
                       input ? (note.word("value").empty() ? "" : "= " + note.word("value") + " ") + "is a finite input but past"
                             : "is " + note.word("value") + " although every input is finite: a product, a scale or an exponential passed",
                       note.word("dtype"), note.number("limit"), input ? ": the type cannot hold it" : "");
}

std::vector<const Note*> Trace::notes_of(NoteKind kind) const {
    std::vector<const Note*> out;
    for (const Note& note : notes)
        if (note.kind == kind) out.push_back(&note);
    return out;
}

}  // namespace attn_trace
