// The `expect` entries (docs/PROBLEM.md#expect-values-for-attn-trace-check): each the values
// one step should have, with where in the trace and how close, for check to compare.
#include "problem_loader.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "attn_trace/trace.hpp"

namespace attn_trace {

void ProblemLoader::read_expectations() {
    if (!has("expect")) return;
    const auto& list = at("expect");
    need(list.is_array(), "$.expect", "expected a list of {\"name\": STEP, \"data\": [[...]]}, found " + describe_json(list));
    for (std::size_t e = 0; e < list.size(); ++e) {
        const std::string path = fmt::format("$.expect[{}]", e);
        const auto& item = list[e];
        need(item.is_object(), path, "expected an object {\"name\": STEP, \"data\": [[...]]}, found " + describe_json(item));
        Expectation x;
        x.json_path = path;
        for (const auto& [key, value] : item.items()) {
            static const std::vector<std::string> keys = {"name", "head", "batch", "t", "tile", "row", "data", "atol", "rtol"};
            if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
                const auto near = nearest_word(key, keys);
                reader_.fail(path + "." + key, "unknown key \"" + key + "\"" + (near.empty() ? "" : " (did you mean \"" + near + "\"?)"));
            }
        }
        need(item.contains("name"), path, "needs \"name\" (a step such as \"weights\")");
        const std::string name = reader_.string(item["name"], path + ".name");
        const auto step = find_step(name);
        if (!step) {
            const auto near = nearest_word(name, step_names());
            reader_.fail(path + ".name", "unknown step \"" + name + "\"" + (near.empty() ? "" : " (did you mean \"" + near + "\"?)"));
        }
        x.name = *step;
        if (item.contains("head")) x.head = static_cast<int>(reader_.whole_number(item["head"], path + ".head", 0, problem_.heads - 1));
        if (item.contains("batch")) x.batch = static_cast<int>(reader_.whole_number(item["batch"], path + ".batch", 0, static_cast<long>(problem_.batch) - 1));
        if (item.contains("t")) x.t = static_cast<int>(reader_.whole_number(item["t"], path + ".t", 0, static_cast<long>(problem_.n) - 1));
        if (item.contains("tile")) {
            const auto& tile = item["tile"];
            need(tile.is_array() && tile.size() == 2, path + ".tile", "expected [query block, key tile], found " + describe_json(tile));
            x.tile = std::array<int, 2>{static_cast<int>(reader_.whole_number(tile[0], path + ".tile[0]", 0, 1L << 30)),
                                        static_cast<int>(reader_.whole_number(tile[1], path + ".tile[1]", 0, 1L << 30))};
        }
        if (item.contains("row")) {
            need(x.name == StepName::jacobian, path + ".row", "only a jacobian entry has a row (the query row of grad's ⟦row⟧)");
            x.row = static_cast<std::size_t>(reader_.whole_number(item["row"], path + ".row", 0, static_cast<long>(problem_.n) - 1));
        }
        need(x.name != StepName::jacobian || x.row, path, "a jacobian entry needs \"row\": the query row whose softmax Jacobian it is");
        need(item.contains("data"), path, "needs \"data\": the expected values");
        const auto array = reader_.array(item["data"], path + ".data");
        need(array.shape.size() <= 2, path + ".data", "expected a matrix (or a vector for a single row)");
        x.data = Matrix(array.shape.size() == 2 ? array.shape[0] : 1, array.shape.back());
        x.data.data() = array.data;
        x.own_tolerance = item.contains("atol") || item.contains("rtol");
        if (item.contains("atol")) x.atol = reader_.number(item["atol"], path + ".atol");
        if (item.contains("rtol")) x.rtol = reader_.number(item["rtol"], path + ".rtol");
        need(x.atol >= 0, path + ".atol", fmt::format("a tolerance must be >= 0, found {}", x.atol));
        need(x.rtol >= 0, path + ".rtol", fmt::format("a tolerance must be >= 0, found {}", x.rtol));
        problem_.expect.push_back(std::move(x));
    }
}

}  // namespace attn_trace
