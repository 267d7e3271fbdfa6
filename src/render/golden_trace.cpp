// The golden-trace reader: a trace written by render_json (`run --format json`)
// read back, next to the writer so that the two keep to one format.
#include <array>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "attn_trace/errors.hpp"
#include "attn_trace/render.hpp"
#include "json/json_reader.hpp"
#include "json/json_text.hpp"

namespace attn_trace {

Trace load_golden_trace(const std::string& path) {
    return parse_golden_trace(read_text_file(path, "the golden trace"), path);
}

Trace parse_golden_trace(const std::string& text, const std::string& file) {
    const nlohmann::json root = parse_json_text(text, file);
    const JsonReader reader(file);
    if (!root.is_object() || !root.contains("attn_trace") || !root.contains("steps"))
        reader.fail("$", "expected a trace written by `attn-trace run ⟦format⟧ json` ({\"attn_trace\": 1, \"steps\": [...]})");
    Trace trace;
    if (root.contains("command")) trace.command = reader.string(root["command"], "$.command");
    trace.problem.recorded = false;
    if (root.contains("problem") && root["problem"].is_object()) {
        const auto& problem = root["problem"];
        trace.problem.dtype = problem.value("dtype", "f64");
        // The settings a run records whole (docs/COMMANDS.md#check); a golden written
        // before has no mask_spec, and the problem file's settings apply.
        if (problem.contains("mask_spec")) {
            trace.problem.recorded = true;
            if (problem.contains("mask")) trace.problem.mask = reader.string(problem["mask"], "$.problem.mask");
            trace.problem.mask_spec = problem["mask_spec"] == "none" ? "" : problem["mask_spec"].dump();
            if (!problem["mask_spec"].is_string() && !problem["mask_spec"].is_object() && !problem["mask_spec"].is_array())
                reader.fail("$.problem.mask_spec", "expected a mask as ⟦mask⟧ takes it, found " + describe_json(problem["mask_spec"]));
            if (problem.contains("scale")) trace.problem.scale = reader.number(problem["scale"], "$.problem.scale");
            if (problem.contains("empty_rows")) trace.problem.empty_rows = reader.string(problem["empty_rows"], "$.problem.empty_rows");
            if (problem.contains("dropout") && !problem["dropout"].is_null()) {
                const auto& d = problem["dropout"];
                if (!d.is_object()) reader.fail("$.problem.dropout", "expected {\"p\", \"seed\", \"mode\"} or null, found " + describe_json(d));
                TraceSummary::Dropout dropout;
                if (d.contains("p")) dropout.p = reader.number(d["p"], "$.problem.dropout.p");
                if (d.contains("seed")) dropout.seed = static_cast<std::uint64_t>(reader.whole_number(d["seed"], "$.problem.dropout.seed", 0, 1L << 53));
                if (d.contains("mode")) dropout.train = reader.string(d["mode"], "$.problem.dropout.mode") == "train";
                trace.problem.dropout = dropout;
            }
        }
    }
    // grad --row writes which row its jacobian is of: check recomputes that row.
    if (root.contains("jacobian_row"))
        trace.numbers.push_back({"jacobian_row", static_cast<double>(reader.whole_number(root["jacobian_row"], "$.jacobian_row", 0, 1L << 40))});
    const auto& steps = root["steps"];
    if (!steps.is_array()) reader.fail("$.steps", "expected a list of steps, found " + describe_json(steps));
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const std::string at = fmt::format("$.steps[{}]", i);
        const auto& s = steps[i];
        if (!s.is_object() || !s.contains("name") || !s.contains("data")) reader.fail(at, "expected a step with \"name\" and \"data\"");
        Step step;
        const std::string name = reader.string(s["name"], at + ".name");
        const auto known = find_step(name);
        if (!known) reader.fail(at + ".name", fmt::format("unknown step \"{}\": expected one of {}", name, fmt::join(step_names(), ", ")));
        step.name = *known;
        if (s.contains("head")) step.head = static_cast<int>(reader.whole_number(s["head"], at + ".head", 0, 1 << 20));
        if (s.contains("batch")) step.batch = static_cast<int>(reader.whole_number(s["batch"], at + ".batch", 0, 1 << 30));
        if (s.contains("t")) step.t = static_cast<int>(reader.whole_number(s["t"], at + ".t", 0, 1 << 30));
        if (s.contains("tile") && !(s["tile"].is_array() && s["tile"].size() == 2))
            reader.fail(at + ".tile", "expected [query block, key tile], found " + describe_json(s["tile"]));
        if (s.contains("tile"))
            step.tile = std::array<int, 2>{static_cast<int>(reader.whole_number(s["tile"][0], at + ".tile[0]", 0, 1 << 30)),
                                           static_cast<int>(reader.whole_number(s["tile"][1], at + ".tile[1]", 0, 1 << 30))};
        step.values = reader.matrix(s["data"], at + ".data");
        trace.steps.push_back(std::move(step));
    }
    return trace;
}

}  // namespace attn_trace
