// Issue 12: what a mutation fuzzer found that hand-written cases missed. Shapes
// are checked before any number is made, and an overflow is an error naming its
// step and cell (a note with allow_nonfinite), never a NaN printed with exit 0.
#include <chrono>
#include <cmath>

#include <catch2/catch.hpp>

#include "attn_trace/errors.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/problem.hpp"

using namespace attn_trace;
using Catch::Contains;

namespace {

// The message of the InputError that `compute` throws.
template <typename Compute>
std::string error_of(Compute&& compute) {
    try {
        compute();
    } catch (const InputError& error) {
        REQUIRE(error.exit_code() == 2);
        return error.what();
    }
    FAIL("no error");
    return "";
}

std::string load_error(const std::string& json) {
    return error_of([&] { parse_problem(json, "p.json"); });
}

bool has_note(const Trace& trace, const std::string& part) {
    for (const auto& note : trace.notes)
        if (note_text(note).find(part) != std::string::npos) return true;
    return false;
}

}  // namespace

TEST_CASE("a random matrix's shape is checked against the problem before its numbers are made") {
    // The shape error, not the bad "dist", shows the shape was read first.
    CHECK(load_error(R"({"Q": [[1]], "K": [[1]], "V": {"random": {"shape": [5, 1], "dist": "bogus"}}})") ==
          "p.json: $.V: K has 1 row (keys) so V needs 1 row, found 5");
    CHECK_THAT(load_error(R"({"X": [[1, 2]], "W_Q": {"random": {"shape": [3, 2], "dist": "bogus"}}, "W_K": [[1], [0]], "W_V": [[1], [0]]})"),
               Contains("$.W_Q: X is (1, 2) so W_Q needs 2 rows, found 3"));
    CHECK_THAT(load_error(R"({"Q": [[1]], "K": [[1]], "V": [[1]], "mask": {"additive": {"random": {"shape": [2, 3], "dist": "bogus"}}}})"),
               Contains("so the additive mask must be (1, 1), found (2, 3)"));
    CHECK_THAT(load_error(R"({"X": [[1]], "W_Q": [[1]], "W_K": [[1]], "W_V": [[1]], "b_Q": {"random": {"shape": [2, 2], "dist": "bogus"}}})"),
               Contains("$.b_Q: expected a vector (1 dimension), found 2 dimensions (2, 2)"));
    // The issue's case: a 2 GiB V beside a K of 1 row is refused at once.
    const auto start = std::chrono::steady_clock::now();
    CHECK(load_error(R"({"Q": [[1]], "K": [[1]], "V": {"random": {"shape": [16384, 16384]}}})") ==
          "p.json: $.V: K has 1 row (keys) so V needs 1 row, found 16384");
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
}

TEST_CASE("a product that overflows is an error naming the step and the cell") {
    const Problem p = parse_problem(R"({"Q": [[1e308], [1]], "K": [[1e308], [1]], "V": [[1], [1]]})", "p.json");
    const std::string message = error_of([&] { pipeline_full(p, {}); });
    CHECK(message ==
          "p.json: overflow: scores (head 0)[0, 0] is inf although every input is finite: a product, a scale or an exponential passed f64's "
          "range (±1.8e+308). Scale the inputs (or the scale) down, or add \"allow_nonfinite\": true to trace it");
    CHECK_THAT(error_of([&] { pipeline_decode(p, {}, {}); }), Contains("overflow: masked (head 0, t 0)[0, 0] is inf"));
    CHECK_THAT(error_of([&] { pipeline_tiled(p, {}, {}); }), Contains("overflow: masked (head 0, tile [0, 0])[0, 0] is inf"));
    CHECK_THAT(error_of([&] { pipeline_fast(p, {}, {}); }), Contains("overflow: row_max (head 0)[0, 0] is inf"));
}

TEST_CASE("overflow in f32 only is reported against f32's range") {
    const Problem p = parse_problem(R"({"Q": [[1e20]], "K": [[1e20]], "V": [[1]]})", "p.json");
    CHECK(std::isfinite(pipeline_full(p, {Dtype::f64, "cpu"}).steps.back().values(0, 0)));
    CHECK_THAT(error_of([&] { pipeline_full(p, {Dtype::f32, "cpu"}); }), Contains("scores (head 0)[0, 0] is inf") && Contains("f32's range (±3.4e+38)"));
}

TEST_CASE("a scale that overflows the scaled scores is reported at the scaled step") {
    const Problem p = parse_problem(R"({"Q": [[2, 0]], "K": [[1, 0], [0, 1]], "V": [[1], [2]], "scale": 1e308})", "p.json");
    CHECK_THAT(error_of([&] { pipeline_full(p, {}); }), Contains("overflow: scaled (head 0)[0, 0] is inf"));
}

TEST_CASE("with allow_nonfinite an overflow is traced and a note names it") {
    const Problem p = parse_problem(R"({"Q": [[1e308]], "K": [[1e308]], "V": [[1]], "allow_nonfinite": true})", "p.json");
    const Trace trace = pipeline_full(p, {});
    CHECK(has_note(trace, "allow_nonfinite: overflow: scores (head 0)[0, 0] is inf"));
    CHECK(std::isnan(trace.steps.back().values(0, 0)));
}

TEST_CASE("what masks and the empty-row policy put there is not overflow") {
    // -inf in mask, masked and row_max; NaN in weights and out under "nan".
    const Problem p = parse_problem(
        R"({"Q": [[1], [1]], "K": [[1], [2]], "V": [[1], [2]], "mask": {"additive": [[0, "-inf"], ["-inf", "-inf"]]}, "empty_rows": "nan"})", "p.json");
    const Trace full = pipeline_full(p, {});
    CHECK(std::isnan(full.steps.back().values(1, 0)));
    CHECK(full.notes.size() == 1);  // the empty row's, no overflow note
    CHECK(std::isnan(pipeline_decode(p, {}, {}).steps.back().values(1, 0)));
    CHECK(std::isnan(pipeline_tiled(p, {}, {1, 1}).steps.back().values(1, 0)));
    CHECK(std::isnan(pipeline_fast(p, {}, {}).steps.back().values(1, 0)));
}
