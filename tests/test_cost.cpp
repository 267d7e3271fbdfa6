// cost (docs/COMMANDS.md#cost) against the figures of two teaching texts (the cost of attention, a KV cache) and a textbook KV cache.
#include <catch2/catch.hpp>

#include "attn_trace/cost_report.hpp"
#include "attn_trace/errors.hpp"
#include "attn_trace/size_text.hpp"

using namespace attn_trace;

namespace {
CostAnswer cost(std::uint64_t n, std::uint64_t d, std::uint64_t heads, std::uint64_t kv_heads = 0) {
    CostQuestion q;
    q.n = n;
    q.d_model = d;
    q.heads = heads;
    q.kv_heads = kv_heads;
    return compute_cost(q);
}
}  // namespace

TEST_CASE("cost: parameters 4d² + 4d, the same for any number of heads") {
    REQUIRE(cost(30, 64, 1).parameters_with_biases == 16640);
    REQUIRE(cost(30, 64, 4).parameters_with_biases == 16640);
    REQUIRE(cost(30, 64, 8).parameters_with_biases == 16640);
    REQUIRE(cost(10, 512, 8).parameters_with_biases == 1050624);
    REQUIRE(cost(10, 512, 8).parameters_without_biases == 1048576);
    // GQA shrinks W_K and W_V: 8 heads of 64, 2 KV heads → K and V have 128 columns.
    REQUIRE(cost(10, 512, 8, 2).parameters_without_biases == 2 * 512 * 512 + 2 * 512 * 128);
    REQUIRE(cost(10, 512, 8, 2).parameters_with_biases == 2 * 512 * 512 + 2 * 512 * 128 + 2 * 512 + 2 * 128);
}

TEST_CASE("cost: one head's float32 score matrix is 0.07, 4.19 and 268.44 MB") {
    REQUIRE(cost(128, 64, 1).score_bytes_per_head == 65536);
    REQUIRE(cost(1024, 64, 1).score_bytes_per_head == 4194304);
    REQUIRE(cost(8192, 64, 1).score_bytes_per_head == 268435456);
    REQUIRE(cost(8192, 64, 1).scores_per_head == 67108864);
    REQUIRE_THAT(cost_text(cost(128, 64, 1)), Catch::Contains("0.07 MB"));
    REQUIRE_THAT(cost_text(cost(1024, 64, 1)), Catch::Contains("4.19 MB"));
    REQUIRE_THAT(cost_text(cost(8192, 64, 1)), Catch::Contains("268.44 MB"));
}

TEST_CASE("cost: the 120-token exercise: 57,600 scores and 230.4 kB per layer") {
    const CostAnswer a = cost(120, 64, 4);
    REQUIRE(a.d_head == 16);
    REQUIRE(a.scores_per_head == 14400);
    REQUIRE(a.scores_per_layer == 57600);
    REQUIRE(a.score_bytes_per_layer == 230400);
    REQUIRE_THAT(cost_text(a), Catch::Contains("57,600 scores") && Catch::Contains("230.4 kB") && Catch::Contains("16,640"));
}

TEST_CASE("cost: FLOPs 4·N·d² + 2·N²·d multiply-adds and the crossover at N = 2d") {
    const CostAnswer a = cost(8192, 4096, 32);
    REQUIRE(a.crossover_length == 8192);
    REQUIRE(a.projection_multiply_adds == 4ull * 8192 * 4096 * 4096);
    REQUIRE(a.attention_multiply_adds == 2ull * 8192 * 8192 * 4096);
    REQUIRE(a.total_multiply_adds == a.projection_multiply_adds + a.attention_multiply_adds);
    // At the crossover both terms are equal; one token more and attention is larger.
    REQUIRE(a.projection_multiply_adds == a.attention_multiply_adds);
    const CostAnswer longer = cost(8193, 4096, 32);
    REQUIRE(longer.attention_multiply_adds > longer.projection_multiply_adds);
}

TEST_CASE("cost: KV cache of 32 layers, 8 KV heads of 128, fp16, 8192 tokens is 1 GiB") {
    CostQuestion q;
    q.n = 8192;
    q.d_model = 4096;
    q.heads = 32;
    q.kv_heads = 8;
    q.layers = 32;
    q.bytes = 2;
    const CostAnswer a = compute_cost(q);
    REQUIRE(a.d_head == 128);
    REQUIRE(a.kv_cache_numbers_per_token == 2 * 32 * 8 * 128);
    REQUIRE(a.kv_cache_bytes_per_token == 131072);
    REQUIRE(a.kv_cache_bytes_total == 1024.0 * 1024 * 1024);
    REQUIRE(a.kv_cache_bytes_per_token_without_sharing == 4 * a.kv_cache_bytes_per_token);
    REQUIRE(a.crossover_length == 4096 + 1024);  // N > d + H_kv·d_k
    REQUIRE_THAT(cost_text(a), Catch::Contains("1.00 GiB") && Catch::Contains("4× smaller"));
}

TEST_CASE("cost: bad sizes are input errors") {
    REQUIRE_THROWS_AS(cost(0, 64, 4), InputError);
    REQUIRE_THROWS_WITH(cost(10, 64, 3), Catch::Contains("heads 3 must divide d_model 64"));
    REQUIRE_THROWS_WITH(cost(10, 64, 4, 3), Catch::Contains("kv_heads 3 must divide heads 4"));
    REQUIRE_THROWS_AS(cost(1ull << 40, 1ull << 20, 1), InputError);  // counts past 64 bits
    CostQuestion q;
    q.n = 4;
    q.d_model = 4;
    q.bytes = 0;
    REQUIRE_THROWS_WITH(compute_cost(q), Catch::Contains("bytes"));
}

// Issue 11, finding 11: "6,144 bytes = 0.01 MB = 6.144 kB" and "2147.48 MB (2.00 GiB)"; issue 30:
// per-token KV figures had no binary unit.
TEST_CASE("cost: byte counts in the unit that fits, no 0.01 MB and no 2147.48 MB") {
    CHECK(bytes_text(0) == "0 bytes");
    CHECK(bytes_text(512) == "512 bytes");
    CHECK(bytes_text(1000) == "1,000 bytes = 1 kB");      // under one KiB: no binary figure
    CHECK(bytes_text(1024) == "1,024 bytes = 1.024 kB (1 KiB)");
    CHECK(bytes_text(6144) == "6,144 bytes = 6.144 kB (6 KiB)");  // a KV cache per token: allocators count KiB
    CHECK(bytes_text(230400) == "230,400 bytes = 230.4 kB = 0.23 MB (225 KiB)");
    CHECK(bytes_text(1048575) == "1,048,575 bytes = 1.05 MB (1024 KiB)");
    CHECK(bytes_text(1048576) == "1,048,576 bytes = 1.05 MB (1.00 MiB)");
    CHECK(bytes_text(4194304) == "4,194,304 bytes = 4.19 MB (4.00 MiB)");
    CHECK(bytes_text(2147483648.0) == "2,147,483,648 bytes = 2.15 GB (2.00 GiB)");
}

