// Bad input is never a crash and never a silent guess: every error names the
// file, the JSON path, what was expected and what was found (docs/PROBLEM.md#errors).
#include <cmath>

#include <catch2/catch.hpp>

#include "attn_trace/errors.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/problem.hpp"

using namespace attn_trace;
using Catch::Contains;

namespace {

const std::string good_x = R"("X": [[1, 0, 0, 1], [0, 1, 0, 0], [0, 0, 1, 0]])";
const std::string good_w = R"("W_Q": [[0.5, 0.5], [0, 0], [1, 0], [0, 1]], "W_K": [[1, 0], [0, 0.5], [0, 2], [0, 0]], "W_V": [[1, 0], [0, 0], [0, 1], [1, 0]])";

// The message of the InputError that loading `json` throws.
std::string error_of(const std::string& json) {
    try {
        parse_problem(json, "damaged.json");
    } catch (const InputError& error) {
        REQUIRE(error.exit_code() == 2);
        return error.what();
    }
    FAIL("no error for " << json);
    return "";
}

}  // namespace

TEST_CASE("the documented example: a W_Q with the wrong number of rows") {
    const std::string message = error_of("{" + good_x + R"(, "W_Q": [[1, 0], [0, 1], [1, 1]], "W_K": [[1], [0], [0], [0]], "W_V": [[1], [0], [0], [0]]})");
    REQUIRE(message == "damaged.json: $.W_Q: X is (3, 4) so W_Q needs 4 rows, found 3");
}

TEST_CASE("malformed JSON names the line and column") {
    REQUIRE_THAT(error_of("{\n  \"Q\": [[1, 2],\n  }"), Contains("damaged.json: malformed JSON at line 3"));
    REQUIRE_THAT(error_of(""), Contains("malformed JSON"));
    REQUIRE_THAT(error_of("[1, 2]"), Contains("$: expected a JSON object"));
}

TEST_CASE("ragged rows, non-numbers, empty matrices and wrong dimensions") {
    REQUIRE_THAT(error_of(R"({"Q": [[1, 2], [3]], "K": [[1, 2]], "V": [[1]]})"), Contains("$.Q[1]: ragged array: expected 2 items like the first, found 1"));
    REQUIRE_THAT(error_of(R"({"Q": [[1, "x"]], "K": [[1, 2]], "V": [[1]]})"), Contains("$.Q[0][1]: expected a number") && Contains("the string \"x\""));
    REQUIRE_THAT(error_of(R"({"Q": [[1, null]], "K": [[1, 2]], "V": [[1]]})"), Contains("$.Q[0][1]") && Contains("found null"));
    REQUIRE_THAT(error_of(R"({"Q": [], "K": [[1, 2]], "V": [[1]]})"), Contains("$.Q: expected a non-empty array"));
    REQUIRE_THAT(error_of(R"({"Q": [[]], "K": [[1, 2]], "V": [[1]]})"), Contains("$.Q[0]") && Contains("non-empty"));
    REQUIRE_THAT(error_of(R"({"Q": [1, 2], "K": [[1, 2]], "V": [[1]]})"), Contains("$.Q: expected Q as (rows, width)"));
    REQUIRE_THAT(error_of(R"({"Q": 5, "K": [[1, 2]], "V": [[1]]})"), Contains("$.Q: expected a matrix") && Contains("the number 5"));
    REQUIRE_THAT(error_of(R"({"Q": {"shape": [2, 2], "data": [1, 2, 3]}, "K": [[1, 2]], "V": [[1]]})"), Contains("$.Q.data: shape (2, 2) needs 4 values, found 3"));
}

TEST_CASE("each matrix with a wrong shape names itself") {
    REQUIRE_THAT(error_of("{" + good_x + R"(, "W_Q": [[0.5, 0.5], [0, 0], [1, 0], [0, 1]], "W_K": [[1, 0], [0, 0.5], [0, 2]], "W_V": [[1, 0], [0, 0], [0, 1], [1, 0]]})"),
                 Contains("$.W_K: X is (3, 4) so W_K needs 4 rows, found 3"));
    REQUIRE_THAT(error_of("{" + good_x + R"(, "W_Q": [[0.5, 0.5], [0, 0], [1, 0], [0, 1]], "W_K": [[1, 0], [0, 0.5], [0, 2], [0, 0]], "W_V": [[1], [0], [0]]})"),
                 Contains("$.W_V: X is (3, 4) so W_V needs 4 rows, found 3"));
    REQUIRE_THAT(error_of("{" + good_x + ", " + good_w + R"(, "b_Q": [1, 2, 3]})"), Contains("$.b_Q: W_Q has 2 output columns so b_Q needs 2 values, found 3"));
    REQUIRE_THAT(error_of("{" + good_x + ", " + good_w + R"(, "W_O": [[1, 2]]})"), Contains("$.W_O: the heads concatenate to 2 columns"));
    REQUIRE_THAT(error_of(R"({"Q": [[1, 2]], "K": [[1, 2], [3, 4]], "V": [[1]]})"), Contains("$.V: K has 2 rows (keys) so V needs 2 rows, found 1"));
    REQUIRE_THAT(error_of("{" + good_x + ", " + good_w + R"(, "tokens": ["a", "b"]})"), Contains("$.tokens: there are 3 queries so tokens needs 3 labels, found 2"));
}

TEST_CASE("a label or title with a newline, tab or other control character shows it as its escape") {
    // Each would break the printed tables (docs/PROBLEM.md#labels-title-tokens-source_tokens),
    // and a tokenizer's newline token is a real label (tools/export_layer.py writes them).
    const std::string qkv = R"("Q": [[1, 0], [0, 1], [1, 1]], "K": [[1, 0], [0, 1]], "V": [[1], [2]])";
    const Problem escaped = parse_problem("{" + qkv + R"(, "title": "two\nlines", "tokens": ["a\nb", "c\td", "\u001b[31mred"], "source_tokens": ["\u0085", "line\u2028break"]})",
                                          "escaped.json");
    CHECK(escaped.title == "two\\nlines");
    CHECK(escaped.tokens == std::vector<std::string>{"a\\nb", "c\\td", "\\u001b[31mred"});
    CHECK(escaped.source_tokens == std::vector<std::string>{"\\u0085", "line\\u2028break"});
    // Any other text is a label as written: other scripts, accents, a zero-width space, symbols, token ids.
    const Problem p = parse_problem("{" + qkv + R"(, "tokens": ["猫", "cafe\u0301", 42], "source_tokens": ["zero\u200bwidth", "<pad>|"]})", "ok.json");
    CHECK(p.tokens == std::vector<std::string>{"猫", "cafe\u0301", "42"});
    CHECK(p.source_tokens == std::vector<std::string>{"zero\u200bwidth", "<pad>|"});
}

TEST_CASE("Q and K widths must agree") {
    REQUIRE_THAT(error_of(R"({"Q": [[1, 2, 3]], "K": [[1, 2]], "V": [[1]]})"), Contains("$.K: queries have d_k = 3 so keys need 3 columns, found 2"));
}

TEST_CASE("unknown keys name the nearest known key") {
    REQUIRE_THAT(error_of(R"({"Q": [[1]], "K": [[1]], "V": [[1]], "scael": 2})"), Contains("$.scael: unknown key \"scael\" (did you mean \"scale\"?)"));
    REQUIRE_THAT(error_of(R"({"Q": [[1]], "K": [[1]], "V": [[1]], "zzzzzzzz": 2})"), Contains("unknown key \"zzzzzzzz\"") && !Contains("did you mean"));
}

TEST_CASE("masks: unknown names, unknown kinds, wrong shapes, wrong lengths") {
    const std::string qkv = R"("Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1], [1, 1]], "V": [[1], [2], [3]])";
    REQUIRE_THAT(error_of("{" + qkv + R"(, "mask": "casual"})"), Contains("damaged.json: $.mask: unknown mask 'casual'"));
    REQUIRE_THAT(error_of("{" + qkv + R"(, "mask": {"blockd": [[true]]}})"), Contains("$.mask.blockd: unknown mask kind \"blockd\" (did you mean \"blocked\"?)"));
    REQUIRE_THAT(error_of("{" + qkv + R"(, "mask": {"blocked": [[true, false], [false, true]]}})"),
                 Contains("$.mask: the scores are (2, 3) (queries × keys) so the blocked mask must be (2, 3), found (2, 2)"));
    REQUIRE_THAT(error_of("{" + qkv + R"(, "mask": {"key_valid": [1, 1]}})"), Contains("$.mask: there are 3 keys so the padding mask needs 3 values, found 2"));
    REQUIRE_THAT(error_of("{" + qkv + R"(, "mask": ["causal", {"additive": [[0, 0, "inf"], [0, 0, 0]]}]})"), Contains("$.mask[1].additive[0][2]: expected a finite bias"));
    REQUIRE_THAT(error_of("{" + qkv + R"(, "mask": {"window": 0}})"), Contains("$.mask.window: expected a whole number from 1"));
    REQUIRE_THAT(error_of("{" + qkv + R"(, "mask": {"allowed": [[true, 2, true], [true, true, true]]}})"), Contains("$.mask.allowed[0][1]: expected true or false"));
}

TEST_CASE("options: scale, empty_rows, heads, lengths, softcap, rope") {
    const std::string qkv = R"("Q": [[1, 0]], "K": [[1, 0]], "V": [[1]])";
    REQUIRE_THAT(error_of("{" + qkv + R"(, "scale": "half"})"), Contains("$.scale: expected \"auto\", \"none\" or a finite number"));
    REQUIRE_THAT(error_of("{" + qkv + R"(, "empty_rows": "skip"})"), Contains("$.empty_rows: expected \"error\", \"zero\" or \"nan\""));
    REQUIRE_THAT(error_of("{" + qkv + R"(, "heads": 0})"), Contains("$.heads: expected a whole number from 1"));
    REQUIRE_THAT(error_of("{" + qkv + R"(, "heads": 1.5})"), Contains("$.heads: expected a whole number"));
    REQUIRE_THAT(error_of("{" + qkv + R"(, "heads": 3})"), Contains("$.Q: 2 query columns do not split into 3 heads"));
    REQUIRE_THAT(error_of("{" + qkv + R"(, "lengths": [1, 1]})"), Contains("$.lengths: the batch has 1 sequence so lengths needs 1 values, found 2"));
    REQUIRE_THAT(error_of("{" + qkv + R"(, "softcap": -1})"), Contains("$.softcap: expected a number > 0"));
    REQUIRE_THAT(error_of(R"({"Q": [[1, 0, 0]], "K": [[1, 0, 0]], "V": [[1]], "rope": {"base": 10000}})"), Contains("$.rope: RoPE rotates pairs, so d_k must be even, found 3"));
    REQUIRE_THAT(error_of("{" + qkv + R"(, "positions": [0]})"), Contains("$.positions: positions are used by RoPE only"));
}

TEST_CASE("inputs that do not go together") {
    REQUIRE_THAT(error_of("{}"), Contains("$: nothing to compute"));
    REQUIRE_THAT(error_of(R"({"Q": [[1]], "K": [[1]]})"), Contains("$.V: Q, K and V go together: V is missing"));
    REQUIRE_THAT(error_of("{" + good_x + R"(, "Q": [[1]], "K": [[1]], "V": [[1]]})"), Contains("give either X (with W_Q, W_K, W_V) or Q, K, V directly"));
    REQUIRE_THAT(error_of("{" + good_x + "}"), Contains("$.W_Q: X is given, so W_Q is needed"));
    REQUIRE_THAT(error_of("{" + good_x + ", " + good_w + R"(, "in_proj_weight": [[1]]})"), Contains("$.in_proj_weight: this nn.MultiheadAttention key needs \"weights_layout\": \"torch\""));
    // Beside Q, K and V a stacked projection has no X to apply to: it used to be ignored.
    for (const char* stacked : {R"("in_proj_weight": [[1], [1], [1]])", R"("in_proj_bias": [0, 0, 0])"})
        REQUIRE_THAT(error_of(std::string(R"({"weights_layout": "torch", "Q": [[1]], "K": [[1]], "V": [[1]], )") + stacked + "}"),
                     Contains("projections apply to X; with Q, K, V given directly leave them out"));
}

TEST_CASE("random matrices: unknown keys, bad distributions, sizes refused before allocation") {
    REQUIRE_THAT(error_of(R"({"Q": {"random": {"shape": [2, 2], "sed": 1}}, "K": [[1, 2]], "V": [[1]]})"), Contains("$.Q.random.sed: unknown key (did you mean \"seed\"?)"));
    REQUIRE_THAT(error_of(R"({"Q": {"random": {"shape": [2, 2], "dist": "gauss"}}, "K": [[1, 2]], "V": [[1]]})"), Contains("$.Q.random.dist: expected \"normal\", \"uniform\" or \"integers\""));
    REQUIRE_THAT(error_of(R"({"Q": {"random": {"shape": [1000000, 1000000]}}, "K": [[1, 2]], "V": [[1]]})"), Contains("$.Q.random.shape") && Contains("GiB"));
}

TEST_CASE("expect entries are validated too") {
    const std::string qkv = R"("Q": [[1, 0]], "K": [[1, 0]], "V": [[1]])";
    REQUIRE_THAT(error_of("{" + qkv + R"(, "expect": [{"name": "weight", "data": [[1]]}]})"), Contains("$.expect[0].name: unknown step \"weight\" (did you mean \"weights\"?)"));
    REQUIRE_THAT(error_of("{" + qkv + R"(, "expect": [{"name": "weights"}]})"), Contains("$.expect[0]: needs \"data\""));
    REQUIRE_THAT(error_of("{" + qkv + R"(, "expect": [{"name": "weights", "head": 1, "data": [[1]]}]})"), Contains("$.expect[0].head: expected a whole number from 0 to 0"));
    // A bad tolerance names its own key (docs/PROBLEM.md#expect-values-for-attn-trace-check).
    REQUIRE_THAT(error_of("{" + qkv + R"(, "expect": [{"name": "weights", "data": [[1]], "atol": -1}]})"), Contains("$.expect[0].atol: a tolerance must be >= 0, found -1"));
    REQUIRE_THAT(error_of("{" + qkv + R"(, "expect": [{"name": "weights", "data": [[1]], "rtol": -0.5}]})"), Contains("$.expect[0].rtol: a tolerance must be >= 0, found -0.5"));
}

TEST_CASE("the strings inf, -inf and nan are numbers where non-finite inputs are allowed") {
    const Problem p = parse_problem(R"({"Q": [["inf", "-inf", "nan"]], "K": [[1, 2, 3]], "V": [[1]], "allow_nonfinite": true})", "x.json");
    REQUIRE(std::isinf(p.Q->data()[0]));
    REQUIRE(p.Q->data()[1] < 0);
    REQUIRE(std::isnan(p.Q->data()[2]));
}

// Issue 11, finding 4: a NaN in Q was reported as "query 0 can read no key".
TEST_CASE("a non-finite input is an error naming its first cell, unless allowed") {
    REQUIRE_THAT(error_of(R"({"Q": [[1, "nan"], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[1], [2]]})"),
                 Contains("damaged.json: $.Q[0][1]: nan in an input"));
    REQUIRE_THAT(error_of(R"({"Q": [[1, 0]], "K": {"shape": [2, 2], "data": [1, 0, "inf", 1]}, "V": [[1], [2]]})"),
                 Contains("$.K.data[2]: inf in an input"));
    REQUIRE_THAT(error_of(R"({"X": [[1, 0]], "W_Q": [[1], [0]], "W_K": [[1], ["-inf"]], "W_V": [[1], [0]]})"),
                 Contains("$.W_K[1][0]: -inf in an input"));
    REQUIRE_THAT(error_of(R"({"Q": [[1, 0]], "K": [[1, 0]], "V": [["nan"]]})"), Contains("or pass allow_nonfinite"));
    // Masks may hold −∞: that is their job.
    REQUIRE_NOTHROW(parse_problem(R"({"Q": [[1]], "K": [[1], [2]], "V": [[1], [2]], "mask": {"additive": [[0, "-inf"]]}})", "m.json"));
    // +∞ or NaN in a mask is always an error, allowed or not.
    REQUIRE_THROWS_WITH(parse_problem(R"({"Q": [[1]], "K": [[1], [2]], "V": [[1], [2]], "mask": {"additive": [[0, "nan"]]}, "allow_nonfinite": true})",
                                      "m.json"),
                        Contains("$.mask.additive[0][1]: expected a finite bias or \"-inf\""));
}

TEST_CASE("allowed non-finite inputs are traced as they spread, and a NaN row is not an empty row") {
    const Problem p = parse_problem(R"({"Q": [[1, "nan"], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[1], [2]]})", "nan.json", true);
    const Trace trace = pipeline_full(p, RunOptions{});
    REQUIRE(std::isnan(trace.find(StepName::weights, 0, std::nullopt, std::nullopt, std::nullopt)->values(0, 0)));
    REQUIRE(trace.find(StepName::weights, 0, std::nullopt, std::nullopt, std::nullopt)->values(1, 1) > 0.5);  // the finite row is untouched
    bool noted = false;
    for (const auto& note : trace.notes) {
        REQUIRE(note.kind != NoteKind::empty_rows);
        noted |= note_text(note).find("$.Q[0][1] is nan") != std::string::npos;
    }
    REQUIRE(noted);
}

// Issue 11, finding 11: a transposed W_Q said "W_Q needs 4 rows, found 2" with no hint.
TEST_CASE("a weight that fits the other way round suggests the other layout") {
    const std::string w_k_v = R"("W_K": [[1, 0], [0, 0.5], [0, 2], [0, 0]], "W_V": [[1, 0], [0, 0], [0, 1], [1, 0]])";
    REQUIRE_THAT(error_of("{" + good_x + R"(, "W_Q": [[0.5, 0, 1, 0], [0.5, 0, 0, 1]], )" + w_k_v + "}"),
                 Contains("$.W_Q: X is (3, 4) so W_Q needs 4 rows, found 2; it fits stored (out_features, in_features) as torch.nn.Linear keeps it: "
                          "add \"weights_layout\": \"torch\""));
    REQUIRE_THAT(error_of("{" + good_x + ", " + good_w + R"(, "weights_layout": "torch"})"),
                 Contains("leave out \"weights_layout\": \"torch\""));
}

