#pragma once
// Small helpers shared by the Catch2 tests.
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn_trace/check.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/problem.hpp"
#include "attn_trace/trace.hpp"

namespace attn_trace::testing {

inline constexpr double inf = std::numeric_limits<double>::infinity();

// The teaching example "damaged on arrival" (X and the three W matrices) without its closing
// brace, so a test can add keys: damaged_keys + R"(, "mask": "causal"})".
inline const std::string damaged_keys = R"({"tokens": ["damaged", "on", "arrival"],
  "X": [[1, 0, 0, 1], [0, 1, 0, 0], [0, 0, 1, 0]],
  "W_Q": [[0.5, 0.5], [0, 0], [1, 0], [0, 1]], "W_K": [[1, 0], [0, 0.5], [0, 2], [0, 0]],
  "W_V": [[1, 0], [0, 0], [0, 1], [1, 0]])";

// The lines of docs/COMMANDS.md's section `## heading`, up to the next section: for
// the tests that hold a table of the page to the library's.
inline std::vector<std::string> doc_section(const std::string& page_name, const std::string& heading) {
    std::ifstream in(ATTN_TRACE_SOURCE_DIR "/docs/" + page_name);
    std::stringstream page;
    page << in.rdbuf();
    const std::string text = page.str();
    const auto from = text.find("## " + heading + "\n");
    if (from == std::string::npos) throw std::runtime_error("docs/" + page_name + " has no section " + heading);
    std::vector<std::string> lines;
    std::istringstream section(text.substr(from, text.find("\n## ", from + 1) - from));
    for (std::string line; std::getline(section, line);) lines.push_back(line);
    return lines;
}
inline std::vector<std::string> commands_doc_section(const std::string& heading) { return doc_section("COMMANDS.md", heading); }

inline Trace run_json(const std::string& json, Dtype dtype = Dtype::f64) {
    return pipeline_full(parse_problem(json, "test.json"), RunOptions{dtype, "cpu"});
}

// A step named as a test writes it; throws for a name that is no step.
inline StepName step_named(const std::string& name) {
    const auto step = find_step(name);
    if (!step) throw std::runtime_error("no step is named " + name);
    return *step;
}

// The step's values; fails the test (throws) when the step is missing.
inline const Matrix& step_values(const Trace& trace, const std::string& name, int head = 0, std::optional<int> batch = std::nullopt) {
    const Step* step = trace.find(step_named(name), head, batch, std::nullopt, std::nullopt);
    if (!step) throw std::runtime_error("no step " + name);
    return step->values;
}

// Builds a Matrix from a nested initializer list: matrix({{1, 2}, {3, 4}}).
inline Matrix matrix(std::initializer_list<std::initializer_list<double>> rows) {
    Matrix m(rows.size(), rows.begin()->size());
    std::size_t i = 0;
    for (const auto& row : rows) {
        std::size_t j = 0;
        for (double x : row) m(i, j++) = x;
        ++i;
    }
    return m;
}

inline bool matches(const Matrix& got, const Matrix& want, double atol) { return compare_matrices(got, want, {atol, 0.0}).passed(); }

}  // namespace attn_trace::testing
