// The JSON trace is a contract (docs/COMMANDS.md#output-formats): full precision,
// non-finite values as strings, and `check --golden` reads it back bit for bit.
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "attn_trace/render.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;
using namespace attn_trace::testing;

TEST_CASE("render_json writes the documented JSON layout with full-precision numbers") {
    const Trace trace = run_json(R"({"title": "t", "Q": {"random": {"shape": [3, 2], "seed": 1}}, "K": {"random": {"shape": [3, 2], "seed": 2}},
                                    "V": {"random": {"shape": [3, 2], "seed": 3}}, "mask": "causal"})");
    const auto json = nlohmann::json::parse(render_json(trace, {}));
    REQUIRE(json["attn_trace"] == 1);
    REQUIRE(json["problem"]["n"] == 3);
    REQUIRE(json["problem"]["mask"] == "causal");
    REQUIRE(json["problem"]["dtype"] == "f64");
    REQUIRE(json["problem"]["scale"].get<double>() == 1 / std::sqrt(2.0));
    bool saw_masked = false;
    for (const auto& step : json["steps"]) {
        const Step* original = trace.find(step_named(step["name"].get<std::string>()), step.contains("head") ? std::optional<int>(step["head"].get<int>()) : std::nullopt,
                                          std::nullopt, std::nullopt, std::nullopt);
        REQUIRE(original != nullptr);
        REQUIRE(step["shape"][0] == original->values.rows());
        for (std::size_t i = 0; i < original->values.rows(); ++i)
            for (std::size_t j = 0; j < original->values.cols(); ++j) {
                const double x = original->values(i, j);
                const auto& written = step["data"][i][j];
                if (std::isinf(x)) {
                    REQUIRE(written == "-inf");
                    saw_masked = true;
                } else {
                    REQUIRE(written.get<double>() == x);  // bit for bit
                }
            }
    }
    REQUIRE(saw_masked);
}

TEST_CASE("nan is written as the string \"nan\"") {
    const Trace trace = run_json(R"({"Q": [[1]], "K": [[1]], "V": [[1]], "mask": "padding:0", "empty_rows": "nan"})");
    const auto json = nlohmann::json::parse(render_json(trace, {}));
    for (const auto& step : json["steps"])
        if (step["name"] == "weights") REQUIRE(step["data"][0][0] == "nan");
}

TEST_CASE("the steps and head filters select JSON steps") {
    const Trace trace = run_json(R"({"Q": {"random": {"shape": [2, 4], "seed": 1}}, "K": {"random": {"shape": [2, 4], "seed": 2}},
                                    "V": {"random": {"shape": [2, 4], "seed": 3}}, "heads": 2})");
    RenderOptions options;
    options.steps = {StepName::weights};
    options.head = 1;
    const auto json = nlohmann::json::parse(render_json(trace, options));
    REQUIRE(json["steps"].size() == 1);
    REQUIRE(json["steps"][0]["head"] == 1);
}
