// A trace in a half type against f64 (docs/PROBLEM.md#dtype-half-precision): a row whose
// scores all overflow is not an empty row, and the lost-cell marks stay bounded and aligned.
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "attn_trace/errors.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/render_table.hpp"
#include "test_helpers.hpp"

using namespace attn_trace;
using namespace attn_trace::testing;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

}  // namespace

TEST_CASE("in f16 a row whose scores all overflow to −inf reads the keys the mask allows: NaN weights, not an empty row", "[half]") {
    // 300 · −300 = −90 000 and 300 · −250 = −75 000, both past f16's largest number, 65 504.
    const Problem problem = parse_problem(R"({"Q": [[300]], "K": [[-300], [-250]], "V": [[1], [2]], "scale": "none"})", "test.json");
    const Trace trace = pipeline_full(problem, RunOptions{Dtype::f16});
    const Matrix& scores = step_values(trace, "scores");
    CHECK(scores(0, 0) == -std::numeric_limits<double>::infinity());
    CHECK(scores(0, 1) == -std::numeric_limits<double>::infinity());
    // exp is 0 for each key and row_sum 0: the weights are 0/0, as f16's softmax gives.
    CHECK(step_values(trace, "row_sum")(0, 0) == 0);
    CHECK(std::isnan(step_values(trace, "weights")(0, 0)));
    CHECK(std::isnan(step_values(trace, "out")(0, 0)));
    CHECK(trace.notes_of(NoteKind::empty_rows).empty());
    // decode and tiled decide it from the mask too.
    CHECK(std::isnan(step_values(pipeline_decode(problem, RunOptions{Dtype::f16}, DecodeOptions{}), "out")(0, 0)));
    CHECK(std::isnan(step_values(pipeline_tiled(problem, RunOptions{Dtype::f16}, TiledOptions{}), "out")(0, 0)));
    // A row the mask blocks whole is still an empty row, refused under the default policy.
    CHECK_THROWS_AS(pipeline_full(parse_problem(R"({"Q": [[300]], "K": [[-300], [-250]], "V": [[1], [2]], "scale": "none",
                                                   "mask": {"blocked": [[true, true]]}})", "test.json"),
                                  RunOptions{Dtype::f16}),
                    InputError);
}

TEST_CASE("a step keeps the places of the first 1000 lost cells and counts them all, the text says so", "[half]") {
    // 1500 keys of which one is exp(0) = 1 and the others exp(−20) ≈ 2.1e-9: below f16's
    // smallest subnormal, 2^−24 ≈ 6.0e-8, so they fall to 0 where f64 keeps them.
    std::string keys = "[[1]";
    for (int j = 1; j < 1500; ++j) keys += ", [-19]";
    const Problem problem = parse_problem(R"({"Q": [[1]], "K": )" + keys + R"(], "V": )" + keys + R"(], "scale": "none"})", "test.json");
    const RunOptions f16{Dtype::f16};
    Trace trace = pipeline_full(problem, f16);
    compare_with_f64(trace, pipeline_full(problem, RunOptions{}));
    const Step& exp = *trace.find(StepName::exp, 0, std::nullopt, std::nullopt, std::nullopt);
    CHECK(exp.underflowed_cells == 1499);
    CHECK(exp.overflowed_cells == 0);
    CHECK(exp.lost_cells.size() == lost_cells_kept);
    CHECK(exp.lost_cells.back().column == lost_cells_kept);  // row-major: columns 1 … 1000
    const std::string text = render_step_text(exp, RenderOptions{});
    CHECK(contains(text, "↓ 1,499 cells fell to 0 where f64 is not 0\n"));
    CHECK(contains(text, "marked: the first 1,000 of them in row-major order; the others are lost too but not marked\n"));
}

TEST_CASE("a table with lost-cell marks has its column headers over the digits, not over the marks", "[half]") {
    const Problem problem = load_problem(std::string(ATTN_TRACE_SOURCE_DIR) + "/tests/golden/half/overflow_f16.json");
    Trace trace = pipeline_full(problem, RunOptions{Dtype::f16});
    compare_with_f64(trace, pipeline_full(problem, RunOptions{}));
    const std::string text = render_step_text(*trace.find(StepName::scores, 0, std::nullopt, std::nullopt, std::nullopt), RenderOptions{});
    const auto lines = lines_of(text);
    REQUIRE(lines.size() > 2);
    // The header's last label ends where the first row's last number ends, one before its mark.
    const std::string& header = lines[1];
    const std::string& row = lines[2];
    CHECK(header.back() == ' ');
    CHECK(display_width(header) == display_width(row));
    CHECK(header[header.size() - 2] != ' ');
}
