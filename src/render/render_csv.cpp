// CSV of one matrix (RFC 4180): the step name and the column labels in the first
// row, each row's label in the first column, every value with full precision
// (shortest round-trip), -inf/inf/nan as text. One step, because a CSV file holds
// one table: a trace of many steps would need a convention no spreadsheet shares.
#include <cmath>

#include <fmt/format.h>

#include "attn_trace/number_text.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/render_table.hpp"

namespace attn_trace {

namespace {

std::string csv_field(const std::string& text) {
    if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
    std::string out = "\"";
    for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

}  // namespace

std::string render_csv(const Trace& trace, const RenderOptions& options) {
    const auto steps = selected_steps(trace, options);
    if (steps.size() != 1) {
        std::vector<std::string> found;
        for (const Step* step : steps) found.push_back(step_title(*step));
        throw InputError(fmt::format("⟦format⟧ csv writes one matrix, but {} steps are selected{}{}: choose one with ⟦steps⟧ NAME "
                                     "and, for per-head or batched steps, ⟦head⟧ H and ⟦batch⟧ B",
                                     steps.size(), steps.empty() ? "" : ": ", fmt::join(found, "; ")));
    }
    const Step& step = *steps.front();
    std::string out = csv_field(shown_name(step));
    for (std::size_t j = 0; j < step.values.cols(); ++j) out += "," + csv_field(column_label(step, j));
    out += "\n";
    for (std::size_t i = 0; i < step.values.rows(); ++i) {
        out += csv_field(row_label(step, i));
        for (std::size_t j = 0; j < step.values.cols(); ++j) out += "," + full_precision_text(step.values(i, j));
        out += "\n";
    }
    return out;
}

}  // namespace attn_trace
