// The one wording of byte sizes (size_text.hpp; bytes_text's cases are in test_cost.cpp)
// and the one reading of comma lists (split_list.hpp): exact strings, since the CLI's
// messages and tests/cli compare them.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "attn_trace/nearest_word.hpp"
#include "attn_trace/number_text.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/mask.hpp"
#include "attn_trace/permutation.hpp"
#include "attn_trace/size_text.hpp"
#include "attn_trace/split_list.hpp"

using namespace attn_trace;

TEST_CASE("size_text: the binary unit that suits the size, GiB to one decimal") {
    CHECK(size_text(0) == "0 KiB");
    CHECK(size_text(512) == "0 KiB");
    CHECK(size_text(1024) == "1 KiB");
    CHECK(size_text(16384) == "16 KiB");
    CHECK(size_text(1048575) == "1024 KiB");  // a byte short of 1 MiB
    CHECK(size_text(1048576) == "1 MiB");
    CHECK(size_text(365e6) == "348 MiB");
    CHECK(size_text(1073741824.0) == "1.0 GiB");
    CHECK(size_text(1.5 * 1073741824.0) == "1.5 GiB");
    CHECK(size_text(17179869184.0) == "16.0 GiB");
}

TEST_CASE("size_text in a chosen unit: three significant digits") {
    CHECK(size_text(0, ByteUnit::MiB) == "0 MiB");
    CHECK(size_text(65536, ByteUnit::MiB) == "0.0625 MiB");
    CHECK(size_text(1024, ByteUnit::KiB) == "1 KiB");
    CHECK(size_text(2147483648.0, ByteUnit::GiB) == "2 GiB");
    CHECK(size_text(17179869184.0, ByteUnit::GiB) == "16 GiB");
    CHECK(size_text(365e6, ByteUnit::GiB) == "0.34 GiB");
}

TEST_CASE("split_list: every comma ends an item, empty ones included") {
    using List = std::vector<std::string>;
    CHECK(split_list("2,0,1", ',') == List{"2", "0", "1"});
    CHECK(split_list("scores", ',') == List{"scores"});
    CHECK(split_list("1,,0", ',') == List{"1", "", "0"});
    CHECK(split_list("1,0,", ',') == List{"1", "0", ""});
    CHECK(split_list(",1", ',') == List{"", "1"});
    CHECK(split_list(",", ',') == List{"", ""});
    CHECK(split_list("", ',') == List{""});
    CHECK(split_list("a b,c", ' ') == List{"a", "b,c"});
}

// What the lists' readers make of the edge cases: the same messages as before split_list.
TEST_CASE("split_list's readers: an empty item or a trailing comma is refused by name") {
    CHECK(parse_mask_string("padding:1,1,0", "--mask").key_valid == std::vector<bool>{true, true, false});
    CHECK_THROWS_WITH(parse_mask_string("padding:1,,0", "--mask"), "--mask: mask 'padding:1,,0': padding takes 1 (valid key) or 0 (padding) per key, found ''");
    CHECK_THROWS_WITH(parse_mask_string("padding:1,0,", "--mask"), "--mask: mask 'padding:1,0,': padding takes 1 (valid key) or 0 (padding) per key, found ''");
    CHECK_THROWS_WITH(parse_mask_string("padding:", "--mask"), "--mask: mask 'padding:': padding takes 1 (valid key) or 0 (padding) per key, found ''");
    CHECK(parse_permutation("2,0,1", 3) == std::vector<std::size_t>{2, 0, 1});
    CHECK_THROWS_WITH(parse_permutation("2,,1", 3), "perm 2,,1: expected indices 0 … 2 separated by commas, found ''");
    CHECK_THROWS_WITH(parse_permutation("2,0,1,", 3), "perm 2,0,1,: expected indices 0 … 2 separated by commas, found a comma at the end");
    CHECK_THROWS_WITH(parse_permutation("", 3), "perm : the experiment permutes 3 rows, so it needs 3 indices, found 0");
}

TEST_CASE("json_quantity writes a whole count as an integer and anything else as it is") {
    CHECK(json_quantity(66.0).dump() == "66");
    CHECK(json_quantity(4194304.0).dump() == "4194304");
    CHECK(json_quantity(-3.0).dump() == "-3");
    CHECK(json_quantity(0.5).dump() == "0.5");
    CHECK(json_quantity(9007199254740992.0).is_number_float());  // 2^53: past exact integers, left a double
    CHECK(json_quantity(std::numeric_limits<double>::infinity()).dump() == "\"inf\"");
    CHECK(json_quantity(std::nan("")).dump() == "\"nan\"");
}

TEST_CASE("nearest_word suggests only what looks like a misspelling") {
    const std::vector<std::string> masks = {"none", "causal", "window", "chunked", "padding"};
    CHECK(nearest_word("casual", masks) == "causal");
    CHECK(nearest_word("WINDOW", masks) == "window");  // case aside
    CHECK(nearest_word("diagonal", masks).empty());
    CHECK(did_you_mean("chunkd", masks) == " (did you mean 'chunked'?)");
    CHECK(did_you_mean("xyz", masks).empty());
}
