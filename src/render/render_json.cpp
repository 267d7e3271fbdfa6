// The JSON trace (docs/COMMANDS.md#output-formats, a contract): {"attn_trace": 1,
// "problem": {...}, "steps": [...]}. nlohmann writes doubles with the shortest round-trip
// representation, so every number reads back bit for bit; non-finite values become
// "-inf", "inf", "nan".

#include <nlohmann/json.hpp>

#include "attn_trace/number_text.hpp"
#include "attn_trace/render.hpp"

namespace attn_trace {

namespace {

nlohmann::json matrix_json(const Matrix& m) {
    nlohmann::json rows = nlohmann::json::array();
    for (std::size_t i = 0; i < m.rows(); ++i) {
        nlohmann::json row = nlohmann::json::array();
        for (std::size_t j = 0; j < m.cols(); ++j) row.push_back(number_json(m(i, j)));
        rows.push_back(std::move(row));
    }
    return rows;
}

}  // namespace

std::string render_json(const Trace& trace, const RenderOptions& options) {
    const auto& p = trace.problem;
    nlohmann::ordered_json problem = {{"title", p.title}, {"n", p.n}, {"m", p.m}, {"d_model", p.d_model}, {"heads", p.heads},
                              {"kv_heads", p.kv_heads}, {"d_k", p.d_k}, {"d_v", p.d_v}, {"scale", number_json(p.scale)},
                              {"mask", p.mask}, {"dtype", p.dtype}, {"backend", p.backend}, {"batch", p.batch},
                              {"empty_rows", p.empty_rows}};
    // The settings whole, as `check --golden` applies them (docs/COMMANDS.md#output-formats).
    problem["mask_spec"] = p.mask_spec.empty() ? nlohmann::ordered_json("none") : nlohmann::ordered_json::parse(p.mask_spec);
    if (!p.model.empty()) problem["model"] = nlohmann::ordered_json::parse(p.model);
    problem["dropout"] = p.dropout ? nlohmann::ordered_json{{"p", p.dropout->p}, {"seed", p.dropout->seed}, {"mode", p.dropout->train ? "train" : "eval"}}
                                   : nlohmann::ordered_json();
    nlohmann::ordered_json steps = nlohmann::ordered_json::array();
    for (const Step* step : selected_steps(trace, options)) {
        nlohmann::ordered_json s = {{"name", shown_name(*step)}};
        if (step->head) s["head"] = *step->head;
        if (step->batch) s["batch"] = *step->batch;
        if (step->t) s["t"] = *step->t;
        if (step->tile) s["tile"] = {(*step->tile)[0], (*step->tile)[1]};
        if (step->evicted) s["evicted"] = *step->evicted;
        s["symbol"] = std::string(step_symbol(step->name));  // docs/NOTATION.md
        s["formula"] = step->formula;
        s["shape"] = {step->values.rows(), step->values.cols()};
        // A run in f32 or a half type, against f64 (docs/PROBLEM.md#dtype-half-precision)
        if (step->max_abs_error_vs_f64) s["max_abs_error_vs_f64"] = number_json(*step->max_abs_error_vs_f64);
        s["data"] = matrix_json(step->values);
        steps.push_back(std::move(s));
    }
    nlohmann::ordered_json notes = nlohmann::ordered_json::array();  // sentences, as docs/COMMANDS.md#output-formats has them
    for (const Note& note : trace.notes) notes.push_back(note_text(note));
    nlohmann::ordered_json out = {{"attn_trace", 1}, {"command", trace.command}, {"problem", problem}, {"notes", notes}, {"steps", steps}};
    for (const auto& [key, value] : trace.numbers) out[key] = json_quantity(value);
    return out.dump() + "\n";
}

}  // namespace attn_trace
