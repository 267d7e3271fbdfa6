// The format table (docs/COMMANDS.md#output-formats): names look up both ways, the
// page shows the table as the code holds it, and every library function writes
// each format the table gives its command and refuses the others.
#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>

#include "attn_trace/errors.hpp"
#include "attn_trace/exercise.hpp"
#include "attn_trace/explain.hpp"
#include "attn_trace/render.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;
using attn_trace::testing::commands_doc_section;

namespace {

std::string commands_text(unsigned commands) {
    std::string out;
    for (auto [bit, names] : {std::pair{for_trace, "run, decode, tiled, grad, permute"}, {for_explain, "explain"}, {for_exercise, "exercise"},
                              {for_cost, "cost"}, {for_variance, "variance"}, {for_bench, "bench"},
                              {for_precision, "precision"}, {for_view, "view"}})
        if (commands & bit) out += (out.empty() ? "" : ", ") + std::string(names);
    return out;
}

}  // namespace

TEST_CASE("every format's name finds the format, and only names of formats find one") {
    for (const auto& info : format_table()) {
        REQUIRE(find_format(info.name) == info.id);
        CHECK(format_name(info.id) == info.name);
        CHECK(fmt::format("{}", info.id) == info.name);
        CHECK(info.commands != 0);
    }
    CHECK_FALSE(find_format("JSON"));
    CHECK_FALSE(find_format("svg"));  // --svg and --heatmap are options beside a format
    CHECK_FALSE(find_format(""));
}

TEST_CASE("docs/COMMANDS.md's format table is the library's, row for row") {
    // Exactly three cells: the --math table below it in the same section has four.
    const std::regex row(R"(\| `(\w+)` \| ([^|]*) \| ([^|]*) \|)");
    std::vector<Format> documented;
    for (const std::string& line : commands_doc_section("Output formats")) {
        std::smatch m;
        if (!std::regex_match(line, m, row)) continue;
        const auto format = find_format(m[1].str());
        INFO(line);
        REQUIRE(format);
        CHECK(m[2].str() == format_info(*format).what);
        CHECK(m[3].str() == commands_text(format_info(*format).commands));
        documented.push_back(*format);
    }
    CHECK(documented == formats_of(~0u));
}

TEST_CASE("each command's library writes the formats the table gives it and refuses the others") {
    std::vector<Format> exercise = exercise_formats();  // in exercise's own order
    std::sort(exercise.begin(), exercise.end());
    CHECK(exercise == formats_of(for_exercise));
    const Problem problem = load_problem(ATTN_TRACE_SOURCE_DIR "/examples/damaged_on_arrival.json");
    const Trace trace = pipeline_full(problem, RunOptions{});
    RenderOptions one_step;
    one_step.steps = {StepName::weights};  // csv writes one matrix
    for (const auto& info : format_table()) {
        INFO(info.name);
        if (accepts(for_trace, info.id)) CHECK_FALSE(render(trace, info.id, one_step).empty());
        ExplainOptions options;
        options.format = info.id;
        if (accepts(for_explain, info.id)) CHECK_FALSE(explain(trace, problem, parse_cell_spec("weights[0,1]"), options).empty());
        else CHECK_THROWS_AS(explain(trace, problem, parse_cell_spec("weights[0,1]"), options), InputError);
        if (accepts(for_exercise, info.id)) CHECK_FALSE(write_exercise("softmax", 0, info.id).empty());
        else CHECK_THROWS_AS(write_exercise("softmax", 0, info.id), InputError);
    }
}
