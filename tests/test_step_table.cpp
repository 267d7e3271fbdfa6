// The step table (docs/NOTATION.md#the-steps): names look up both ways, the page
// shows the table as the code holds it, and every trace holds only steps the table
// says its command produces.
#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>

#include "attn_trace/permutation.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;
using attn_trace::testing::doc_section;

namespace {

std::string commands_text(unsigned commands) {
    std::string out;
    for (auto [bit, name] : {std::pair{by_run, "run"}, {by_decode, "decode"}, {by_tiled, "tiled"}, {by_grad, "grad"}, {by_permute, "permute"}})
        if (commands & bit) out += (out.empty() ? "" : ", ") + std::string(name);
    return out;
}

// Every step of the trace is one the table says its command produces.
void require_in_table(const Trace& trace, unsigned command) {
    REQUIRE_FALSE(trace.steps.empty());
    for (const Step& step : trace.steps) {
        INFO(trace.command << " trace's step " << step.name);
        CHECK((step_info(step.name).commands & command) != 0);
    }
}

}  // namespace

TEST_CASE("every step's name finds the step, and only names of steps find one") {
    for (const auto& info : step_table()) {
        if (!info.commands) {
            CHECK_FALSE(find_step(info.name));  // `given` is written, never typed
            continue;
        }
        REQUIRE(find_step(info.name) == info.id);
        CHECK(step_name(info.id) == info.name);
        CHECK(fmt::format("{}", info.id) == info.name);
    }
    CHECK_FALSE(find_step("Scores"));
    CHECK_FALSE(find_step("given"));
    CHECK_FALSE(find_step(""));
    CHECK(step_names().size() + 1 == step_table().size());
    CHECK(is_gradient(StepName::grad_q));
    CHECK_FALSE(is_gradient(StepName::lse));
    CHECK(is_grad_step(StepName::lse));
    CHECK_FALSE(is_grad_step(StepName::weights));
}

TEST_CASE("docs/NOTATION.md's table is the library's, row for row") {
    const std::regex row(R"(\| `(\w+)` \| (.*) \| `(.*)` \| (.*) \| (.*) \| (.*) \|)");
    std::vector<std::string> documented;
    for (const std::string& line : doc_section("NOTATION.md", "The steps")) {
        std::smatch m;
        if (!std::regex_match(line, m, row)) continue;
        const auto step = find_step(m[1].str());
        INFO(line);
        REQUIRE(step);
        const StepInfo& info = step_info(*step);
        CHECK(m[2].str() == info.symbol);
        CHECK(m[3].str() == info.latex);
        CHECK(m[4].str() == info.formula);
        CHECK(m[5].str() == info.shape);
        CHECK(m[6].str() == commands_text(info.commands));
        documented.push_back(m[1].str());
    }
    CHECK(documented == step_names());
}

TEST_CASE("every step has one symbol: no two steps share one, but for the running and tile forms the page names") {
    // tiled's m and l are row_max's and row_sum's running forms (docs/NOTATION.md#one-name-per-quantity).
    const std::vector<std::pair<StepName, StepName>> shared = {{StepName::row_max, StepName::m}, {StepName::row_sum, StepName::l}};
    for (const StepInfo& a : step_table())
        for (const StepInfo& b : step_table()) {
            if (a.id >= b.id || !a.commands || !b.commands || a.symbol != b.symbol) continue;
            INFO(a.name << " and " << b.name << " share " << a.symbol);
            CHECK(std::find(shared.begin(), shared.end(), std::pair{a.id, b.id}) != shared.end());
        }
    CHECK(step_symbol_latex(StepName::row_sum) == "\\ell");
    CHECK(step_symbol(StepName::masked) == "Z");
    CHECK(defined_as("A", "E / ℓ") == "A = E / ℓ");
    CHECK(defined_as("Q", "(given)") == "Q (given)");
    CHECK(defined_as("", "a label's formula") == "a label's formula");
    CHECK(defined_as("X", "") == "X");
}

TEST_CASE("each command's trace holds only the steps the table gives it") {
    for (const char* example : {"/examples/damaged_on_arrival.json", "/examples/mla_small.json", "/examples/gqa_8q_2kv.json",
                                "/examples/dropout_train.json", "/examples/sparse_bigbird.json", "/examples/cross_attention.json"}) {
        INFO(example);
        const Problem p = load_problem(std::string(ATTN_TRACE_SOURCE_DIR) + example);
        const RunOptions options{Dtype::f64, "cpu"};
        require_in_table(pipeline_full(p, options), by_run);
        PermuteOptions permute;
        permute.perm = random_permutation(p.n, 1);
        require_in_table(permutation_trace(p, options, permute), by_permute);
        GradOptions grad;
        grad.row = 0;
        if (!p.mla) require_in_table(pipeline_grad(p, options, grad), by_grad);  // grad does not trace MLA yet
        if (p.dropout && p.dropout->train) continue;  // decode, tiled and grad's tiles refuse train mode
        grad.row.reset();  // the tiled backward keeps no whole row of weights
        grad.tiled = TiledOptions{};
        if (!p.mla) require_in_table(pipeline_grad(p, options, grad), by_grad);
        if (p.cross_attention()) continue;  // decoding is self-attention
        require_in_table(pipeline_decode(p, options, {}), by_decode);
        require_in_table(pipeline_tiled(p, options, {}), by_tiled);
    }
}
