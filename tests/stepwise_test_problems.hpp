#pragma once
// Random problems for the decode and tiled tests: many shapes, every mask form,
// GQA and batches, each compared with the full computation.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn_trace/compare.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/random.hpp"

namespace attn_trace::testing {

struct ProblemShape {
    std::size_t n, m;
    int heads, kv_heads;
    std::size_t d_k, d_v;
};

inline nlohmann::json random_matrix(std::size_t rows, std::size_t cols, std::uint64_t seed) {
    return {{"random", {{"shape", {rows, cols}}, {"seed", seed}}}};
}

// Q, K, V given directly (n may differ from m), with the masks and extra keys.
inline nlohmann::json random_qkv(const ProblemShape& s, std::uint64_t seed) {
    nlohmann::json p;
    p["Q"] = random_matrix(s.n, static_cast<std::size_t>(s.heads) * s.d_k, seed);
    p["K"] = random_matrix(s.m, static_cast<std::size_t>(s.kv_heads) * s.d_k, seed + 1);
    p["V"] = random_matrix(s.m, static_cast<std::size_t>(s.kv_heads) * s.d_v, seed + 2);
    p["heads"] = s.heads;
    p["kv_heads"] = s.kv_heads;
    p["empty_rows"] = "zero";
    return p;
}

// Every mask form of docs/PROBLEM.md#masks for n queries and m keys, random where it has a choice.
inline std::vector<nlohmann::json> every_mask(std::size_t n, std::size_t m, std::uint64_t seed) {
    PortableRandom random(seed);
    auto booleans = [&](double p_true) {
        nlohmann::json rows = nlohmann::json::array();
        for (std::size_t i = 0; i < n; ++i) {
            nlohmann::json row = nlohmann::json::array();
            for (std::size_t j = 0; j < m; ++j) row.push_back(random.uniform() < p_true);
            rows.push_back(row);
        }
        return rows;
    };
    nlohmann::json additive = nlohmann::json::array();
    for (std::size_t i = 0; i < n; ++i) {
        nlohmann::json row = nlohmann::json::array();
        for (std::size_t j = 0; j < m; ++j) row.push_back(random.uniform() < 0.3 ? nlohmann::json("-inf") : nlohmann::json(random.normal()));
        additive.push_back(row);
    }
    nlohmann::json valid = nlohmann::json::array();
    for (std::size_t j = 0; j < m; ++j) valid.push_back(random.uniform() < 0.7 ? 1 : 0);
    return {"none",
            "causal",
            "causal-bottom-right",
            {{"window", 2}},
            {{"window", {{"left", 1}, {"right", 1}}}},
            {{"key_valid", valid}},
            {{"additive", additive}},
            {{"allowed", booleans(0.6)}},
            {{"blocked", booleans(0.4)}},
            nlohmann::json::array({"causal-bottom-right", {{"key_valid", valid}}})};
}

inline const std::vector<ProblemShape>& problem_shapes() {
    static const std::vector<ProblemShape> shapes = {
        {1, 1, 1, 1, 2, 2}, {3, 3, 1, 1, 2, 2}, {5, 5, 2, 2, 3, 2}, {7, 7, 4, 2, 4, 4},
        {4, 9, 2, 1, 3, 3}, {8, 8, 8, 2, 2, 3}, {1, 6, 3, 3, 2, 1}, {9, 9, 1, 1, 5, 5},
    };
    return shapes;
}

// Every `out` (per head and batch), `concat` and `final` of the reference
// without t or tile has its twin in `got`, equal within the tolerance.
inline void require_same_outputs(const Trace& got, const Trace& reference, Tolerance tolerance) {
    std::size_t compared = 0;
    for (const Step& want : reference.steps) {
        if (want.name != StepName::out && want.name != StepName::concat && want.name != StepName::final) continue;
        const Step* step = got.find(want.name, want.head, want.batch, std::nullopt, std::nullopt);
        INFO("step " << want.name << " head " << want.head.value_or(-1) << " batch " << want.batch.value_or(-1));
        REQUIRE(step != nullptr);
        const Comparison c = compare_matrices(step->values, want.values, tolerance);
        INFO("max error " << c.max_error << " at [" << c.worst_row << ", " << c.worst_col << "], " << c.failed << " failed");
        REQUIRE(c.passed());
        ++compared;
    }
    REQUIRE(compared > 0);
}

inline double trace_number(const Trace& trace, const std::string& key) {
    for (const auto& [name, value] : trace.numbers)
        if (name == key) return value;
    FAIL("no number " << key);
    return 0;
}

}  // namespace attn_trace::testing
