// Labels in any script line up in a terminal, and the characters that would break a
// table are found (docs/PROBLEM.md#labels-title-tokens-source_tokens): widths are the C
// library's wcwidth under a UTF-8 locale of their own, the program's locale untouched.
#include <catch2/catch.hpp>

#include <clocale>
#include <string>

#include <fmt/format.h>
#include <locale.h>

#include "attn_trace/pipeline.hpp"
#include "attn_trace/problem.hpp"
#include "attn_trace/render.hpp"
#include "attn_trace/text_width.hpp"

using namespace attn_trace;

TEST_CASE("display width: CJK takes two columns, a combining mark none, ASCII and the ellipsis one") {
    CHECK(display_width("") == 0);
    CHECK(display_width("arrival") == 7);
    CHECK(display_width("猫") == 2);
    CHECK(display_width("日本") == 4);
    CHECK(display_width("cafe\u0301") == 4);  // e + U+0301: one column, as the precomposed é
    CHECK(display_width("caf\u00e9") == 4);
    CHECK(display_width("…") == 1);
    CHECK(display_width("×") == 1);
    CHECK(display_width("a\u200Bb") == 2);  // a zero-width space takes none
    CHECK(display_width("\xff") == 1);      // not UTF-8: one replacement character
}

TEST_CASE("fit width: a text that does not fit is cut to whole characters and ends in an ellipsis") {
    CHECK(fit_width("cat", 7) == "cat");
    CHECK(fit_width("arrival", 7) == "arrival");
    CHECK(fit_width("extraordinary", 7) == "extrao…");
    CHECK(fit_width("日本語のラベル", 7) == "日本語…");  // 6 columns and the ellipsis
    CHECK(fit_width("日本語のラベル", 6) == "日本…");    // a wide character never half fits
    CHECK(fit_width("cafe\u0301ss", 5) == "cafe\u0301…");  // a base letter keeps its accent
    CHECK(fit_width("cafe\u0301ss", 4) == "caf…");
    CHECK(fit_width("abc", 1) == "…");
    CHECK(fit_width("abc", 0).empty());
    for (std::size_t width = 1; width < 12; ++width) CHECK(display_width(fit_width("日本語のラベル", width)) <= width);
}

TEST_CASE("control characters and line separators are written as their escapes, other characters as they are") {
    CHECK(visible_text("a\nb") == "a\\nb");
    CHECK(visible_text("c\td") == "c\\td");
    CHECK(visible_text("x\ry") == "x\\ry");
    CHECK(visible_text("\x1b[31mred") == "\\u001b[31mred");
    CHECK(visible_text(std::string("nul\0", 4)) == "nul\\u0000");
    CHECK(visible_text("del\x7f") == "del\\u007f");
    CHECK(visible_text("next\u0085line") == "next\\u0085line");
    CHECK(visible_text("line\u2028separator") == "line\\u2028separator");
    CHECK(visible_text("para\u2029graph") == "para\\u2029graph");
    CHECK(visible_text("\n") == "\\n");  // a tokenizer's newline token
    for (const std::string plain : {"damaged on arrival", "猫 cafe\u0301 <pad> a|b", "zero\u200Bwidth", "back\\slash", "bad \xff utf-8"})
        CHECK(visible_text(plain) == plain);
}

TEST_CASE("measuring width leaves the program's locale and the thread's as they were") {
    const std::string before = std::setlocale(LC_ALL, nullptr);
    const locale_t thread_before = uselocale(locale_t{});
    CHECK(display_width("日本") == 4);
    CHECK(fit_width("日本語のラベル", 5) == "日本…");
    CHECK(visible_text("猫\n") == "猫\\n");
    CHECK(std::setlocale(LC_ALL, nullptr) == before);
    CHECK(uselocale(locale_t{}) == thread_before);
    CHECK(fmt::format("{:.4f}", 0.5) == "0.5000");
}

TEST_CASE("a text table of CJK and accented labels lines up in terminal columns") {
    const Problem problem = parse_problem(R"({"tokens": ["cat", "猫", "日本", "cafe\u0301"], "Q": [[1], [0], [1], [2]],
                                             "K": [[1], [0], [1], [2]], "V": [[1], [0], [1], [2]]})",
                                          "labels.json");
    const Trace trace = pipeline_full(problem, RunOptions{});
    const std::string text = render_step_text(*trace.find(StepName::weights, 0, std::nullopt, std::nullopt, std::nullopt), RenderOptions{});
    // Each label is padded to four columns: "猫" with two spaces, "日本" with none.
    CHECK_THAT(text, Catch::Contains("         cat      猫    日本    cafe\u0301\n"
                                     "cat   0.1966  0.0723  0.1966  0.5344\n"
                                     "猫    0.2500  0.2500  0.2500  0.2500\n"
                                     "日本  0.1966  0.0723  0.1966  0.5344\n"
                                     "cafe\u0301  0.1050  0.0142  0.1050  0.7758\n"));
}

TEST_CASE("the text heatmap cuts a column label wider than its cell with an ellipsis") {
    const Problem problem = parse_problem(R"({"tokens": ["extraordinary", "日本語のラベル", "cat"], "Q": [[1, 0], [0, 1], [1, 1]],
                                             "K": [[1, 0], [0, 1], [1, 1]], "V": [[1, 0], [0, 1], [1, 1]]})",
                                          "labels.json");
    const std::string text = render_heatmap(pipeline_full(problem, RunOptions{}), RenderOptions{});
    // Cells are 7 columns ("0.4011" and its shade); the row labels stay whole.
    CHECK_THAT(text, Catch::Contains("\n               extrao… 日本語…     cat\n"
                                     "extraordinary  0.4011▒ 0.1978░ 0.4011▒\n"
                                     "日本語のラベル 0.1978░ 0.4011▒ 0.4011▒\n"));
}
