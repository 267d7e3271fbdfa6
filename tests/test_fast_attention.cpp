// The fast path against the reference trace (pipeline_full): every step the fast
// trace keeps must equal the full trace's step of the same name, head and batch,
// for shapes that are not multiples of the block sizes, every mask form, GQA,
// batches and empty rows.
#include <catch2/catch.hpp>

#include <cmath>

#include <hwy/targets.h>
#include <nlohmann/json.hpp>

#include "attn_trace/compare.hpp"
#include "attn_trace/cpu_kernel.hpp"
#include "attn_trace/errors.hpp"
#include "backend/cpu/naive_attention.hpp"
#include "attn_trace/pipeline.hpp"
#include "attn_trace/random.hpp"
#include "attn_trace/tolerances.hpp"

using namespace attn_trace;
using nlohmann::json;

namespace {

json random_matrix(std::size_t rows, std::size_t cols, int seed) {
    return {{"random", {{"shape", {rows, cols}}, {"seed", seed}, {"dist", "normal"}}}};
}

// (batch, rows, cols) of numbers, for the batched X that `random` does not make.
json literal_batch(std::size_t batch, std::size_t rows, std::size_t cols, std::uint64_t seed) {
    PortableRandom generator(seed);
    json out = json::array();
    for (std::size_t b = 0; b < batch; ++b) {
        json matrix = json::array();
        for (std::size_t i = 0; i < rows; ++i) {
            json row = json::array();
            for (std::size_t j = 0; j < cols; ++j) row.push_back(generator.normal());
            matrix.push_back(row);
        }
        out.push_back(matrix);
    }
    return out;
}

// Q, K, V given directly: n queries, m keys, H query heads, H_kv KV heads.
json qkv_problem(std::size_t n, std::size_t m, std::size_t d_k, std::size_t d_v, int heads = 1, int kv_heads = 1) {
    json p = {{"Q", random_matrix(n, static_cast<std::size_t>(heads) * d_k, 1)},
              {"K", random_matrix(m, static_cast<std::size_t>(kv_heads) * d_k, 2)},
              {"V", random_matrix(m, static_cast<std::size_t>(kv_heads) * d_v, 3)}};
    if (heads > 1) p["heads"] = heads;
    if (kv_heads != heads) p["kv_heads"] = kv_heads;
    return p;
}

// Small blocks so that every problem here spans several blocks and tiles, with ragged last ones.
FastPathOptions small_blocks() { return FastPathOptions{.threads = 2, .block_q = 4, .block_k = 8, .reason = ""}; }

Tolerance tolerance_for(Dtype dtype) { return dtype == Dtype::f64 ? tolerances::same_math_f64 : tolerances::f32_vs_f64; }

// Every step of the fast trace equals the reference's step of the same name, head and batch.
void require_fast_equals_full(const json& problem_json, Dtype dtype, const FastPathOptions& fast = small_blocks()) {
    const Problem problem = parse_problem(problem_json.dump(), "test.json");
    const RunOptions options{dtype, "cpu"};
    const Trace full = pipeline_full(problem, options);
    const Trace quick = pipeline_fast(problem, options, fast);
    REQUIRE_FALSE(quick.steps.empty());
    for (const Step& step : quick.steps) {
        INFO("step " << step.name << " head " << step.head.value_or(-1) << " batch " << step.batch.value_or(-1) << " in "
                     << dtype_name(dtype) << " of " << problem_json.dump().substr(0, 300));
        const Step* want = full.find(step.name, step.head, step.batch, std::nullopt, std::nullopt);
        REQUIRE(want != nullptr);
        const Comparison c = compare_matrices(step.values, want->values, tolerance_for(dtype));
        INFO("max error " << c.max_error << " at (" << c.worst_row << ", " << c.worst_col << "), " << c.failed << " failed");
        REQUIRE(c.passed());
    }
}

void require_both_dtypes(const json& problem_json) {
    require_fast_equals_full(problem_json, Dtype::f64);
    require_fast_equals_full(problem_json, Dtype::f32);
}

}  // namespace

TEST_CASE("the kernel in use is the one ATTN_TRACE_KERNEL names, else the CPU's best", "[fast]") {
    const char* forced = std::getenv("ATTN_TRACE_KERNEL");
    const auto supported = supported_kernel_target_names();
    REQUIRE_FALSE(supported.empty());
    CHECK(supported.back() == "baseline");  // every x86-64 runs it
    CHECK(kernel_target() == (forced && *forced ? std::string(forced) : supported.front()));
}

TEST_CASE("the version's kernel names cover every target bit this Highway can compile", "[fast]") {
    // HWY_TARGETS: the targets Highway compiles here; every x86 target bit it defines, and
    // the bits it reserves for x86 targets of later releases, each go by a name.
    for (int bit = 0; bit < 63; ++bit) {
        const std::int64_t target = std::int64_t{1} << bit;
        const bool x86 = bit <= HWY_HIGHEST_TARGET_BIT_X86 || target == HWY_EMU128 || target == HWY_SCALAR;
        if ((HWY_TARGETS & target) || x86) {
            INFO("Highway target bit " << bit << " (" << hwy::TargetName(target) << ")");
            CHECK(kernel_target_names_of(target).size() == 1);
        }
    }
    CHECK(kernel_target_names_of(HWY_AVX3) == std::vector<std::string>{"avx512"});
    CHECK(kernel_target_names_of(HWY_AVX2) == std::vector<std::string>{"avx2"});
    CHECK(kernel_target_names_of(HWY_SSE4 | HWY_EMU128) == std::vector<std::string>{"baseline"});
}

TEST_CASE("fast path equals the full trace for shapes off the block sizes", "[fast]") {
    const std::size_t shapes[][4] = {{1, 1, 3, 3}, {1, 7, 4, 2}, {9, 1, 2, 5}, {13, 21, 5, 3}, {16, 16, 8, 8}, {33, 70, 16, 9}};
    for (const auto& s : shapes) require_both_dtypes(qkv_problem(s[0], s[1], s[2], s[3]));
}

TEST_CASE("fast path equals the full trace with the kernel's default blocks", "[fast]") {
    // One thread keeps the default Br = 256 from n = 1024 on; n, m and d_v are off
    // Br, Bc = 256, the 16-query panels and the 6-row micro-tiles, so every ragged edge runs.
    require_fast_equals_full(qkv_problem(2050, 263, 8, 7), Dtype::f32, FastPathOptions{.threads = 1, .reason = ""});
    json causal = qkv_problem(130, 600, 8, 8);
    causal["mask"] = "causal-bottom-right";
    require_fast_equals_full(causal, Dtype::f64, FastPathOptions{.threads = 2, .reason = ""});
    // A window wider than a panel: each panel's keys split into a masked left edge, an
    // unmasked middle and a masked right edge, over several key tiles.
    // Also with more keys than queries (the window aligned to the last key).
    for (const std::size_t m : {std::size_t{300}, std::size_t{340}}) {
        json window = qkv_problem(300, m, 8, 8);
        window["mask"] = {{"window", {{"left", 70}, {"right", 20}}}};
        for (const Dtype dtype : {Dtype::f32, Dtype::f64})
            for (const std::size_t block_k : {std::size_t{0}, std::size_t{24}})
                require_fast_equals_full(window, dtype, FastPathOptions{.threads = 2, .block_q = 0, .block_k = block_k, .reason = ""});
    }
}

TEST_CASE("fast path equals the full trace under every mask form", "[fast]") {
    const std::size_t n = 11, m = 19;
    std::vector<int> valid(m, 1);
    valid[3] = valid[8] = valid[17] = 0;
    json additive = json::array(), allowed = json::array(), blocked = json::array();
    for (std::size_t i = 0; i < n; ++i) {
        json a = json::array(), yes = json::array(), no = json::array();
        for (std::size_t j = 0; j < m; ++j) {
            a.push_back((i + j) % 5 == 0 ? json("-inf") : json(0.25 * static_cast<double>((i * j) % 3)));
            yes.push_back((i + 2 * j) % 4 != 0);
            no.push_back((i + j) % 6 == 0);
        }
        additive.push_back(a);
        allowed.push_back(yes);
        blocked.push_back(no);
    }
    const std::vector<json> masks = {"causal",
                                     "causal-bottom-right",
                                     "window:3",
                                     {{"window", {{"left", 2}, {"right", 1}}}},
                                     {{"key_valid", valid}},
                                     {{"additive", additive}},
                                     {{"allowed", allowed}},
                                     {{"blocked", blocked}},
                                     json::array({"causal-bottom-right", {{"key_valid", valid}}, {{"additive", additive}}})};
    for (const auto& mask : masks) {
        json p = qkv_problem(n, m, 4, 3);
        p["mask"] = mask;
        p["empty_rows"] = "zero";  // some combinations leave a row with no key
        require_both_dtypes(p);
    }
}

TEST_CASE("fast path equals the full trace with ALiBi, softcap and RoPE", "[fast]") {
    json p = qkv_problem(10, 14, 4, 4, 2);
    p["alibi"] = true;
    p["mask"] = "causal-bottom-right";
    require_both_dtypes(p);
    json capped = qkv_problem(10, 14, 4, 4);
    capped["softcap"] = 0.5;
    capped["mask"] = "causal";
    require_both_dtypes(capped);
    json rotated = qkv_problem(10, 14, 4, 4, 2);
    rotated["rope"] = {{"base", 10000}};
    require_both_dtypes(rotated);
}

TEST_CASE("fast path equals the full trace for multi-head, GQA, MQA and W_O", "[fast]") {
    require_both_dtypes(qkv_problem(12, 17, 4, 3, 4, 2));  // GQA
    require_both_dtypes(qkv_problem(12, 17, 4, 3, 4, 1));  // MQA
    json tokens = {{"X", random_matrix(9, 8, 1)},
                   {"W_Q", random_matrix(8, 12, 2)},
                   {"W_K", random_matrix(8, 6, 3)},
                   {"W_V", random_matrix(8, 6, 4)},
                   {"W_O", random_matrix(12, 5, 5)},
                   {"b_O", {0.5, -1, 0, 2, 0.25}},
                   {"heads", 4},
                   {"kv_heads", 2},
                   {"mask", "causal"}};
    require_both_dtypes(tokens);
}

TEST_CASE("fast path equals the full trace for a padded batch", "[fast]") {
    const json p = {{"X", literal_batch(3, 10, 6, 7)},
                    {"W_Q", random_matrix(6, 8, 2)},
                    {"W_K", random_matrix(6, 8, 3)},
                    {"W_V", random_matrix(6, 8, 4)},
                    {"heads", 2},
                    {"lengths", {10, 6, 1}},
                    {"mask", "causal"}};
    require_both_dtypes(p);
}

TEST_CASE("fast path equals the full trace when a later tile's score jumps far past the running max", "[fast]") {
    // After the first tile the kernel shifts a tile's scores by the max so far; a
    // score 100 above it (144 in base-2 units: 2^144 overflows a float) must send
    // that tile the two-pass way (key 12 holds almost all the weight); later keys
    // 60 and 90 below it, and row 2 (q = −1) sees them all far below its max.
    json k = json::array(), v = json::array();
    for (int j = 0; j < 40; ++j) {
        k.push_back({j == 12 ? 100.0 : j == 21 ? 60.0 : j == 30 ? 90.0 : 0.01 * j});
        v.push_back({static_cast<double>(j % 7) - 3.0, 0.5 * j});
    }
    const json p = {{"Q", {{1.0}, {1.0}, {-1.0}, {0.5}, {1.0}}}, {"K", k}, {"V", v}};
    require_both_dtypes(p);
}

TEST_CASE("fast path keeps a large V finite when a later key takes over the row", "[fast]") {
    // One key per tile: key 1 is 40 above key 0 (58 in base-2 units). Shifted by the
    // max before its tile, its weight would be 2^58 and times V = 1e22 overflow a
    // float; the kernel must take that tile the two-pass way (a review found this).
    const json p = {{"Q", {{1.0}}}, {"K", {{0.0}, {40.0}}}, {"V", {{0.0}, {1e22}}}};
    const FastPathOptions one_key_tiles{.threads = 1, .block_q = 1, .block_k = 1, .reason = ""};
    require_fast_equals_full(p, Dtype::f32, one_key_tiles);
    require_fast_equals_full(p, Dtype::f64, one_key_tiles);
}

TEST_CASE("fast path follows the empty-row policy", "[fast]") {
    // Keys 0-2 are padding and the mask is causal: queries 0-2 can read nothing.
    json p = qkv_problem(9, 9, 4, 4);
    p["mask"] = json::array({"causal", {{"key_valid", {0, 0, 0, 1, 1, 1, 1, 1, 1}}}});
    for (const char* policy : {"zero", "nan"}) {
        p["empty_rows"] = policy;
        require_both_dtypes(p);
    }
    p["empty_rows"] = "error";
    const Problem problem = parse_problem(p.dump(), "test.json");
    REQUIRE_THROWS_AS(pipeline_fast(problem, RunOptions{}, small_blocks()), InputError);
    REQUIRE_THROWS_WITH(pipeline_fast(problem, RunOptions{}, small_blocks()), Catch::Contains("query 0") && Catch::Contains("or empty_rows zero|nan"));
}

TEST_CASE("fast path skips the tiles a causal mask hides", "[fast]") {
    // 32 queries in blocks of 4 against 32 keys in tiles of 8: block b reads tiles 0 … ⌊(4b+3)/8⌋.
    json p = qkv_problem(32, 32, 4, 4);
    p["mask"] = "causal";
    const Trace trace = pipeline_fast(parse_problem(p.dump(), "test.json"), RunOptions{}, small_blocks());
    double skipped = -1;
    for (const auto& [name, value] : trace.numbers)
        if (name == "tiles_skipped") skipped = value;
    // 8 blocks × 4 tiles = 32 in all; computed: 1+1+2+2+3+3+4+4 = 20.
    REQUIRE(skipped == 12);
}

TEST_CASE("bench's naive baseline equals the fast path, and refuses what it does not mask", "[fast]") {
    const std::size_t n = 37, m = 37, d = 5;
    std::vector<float> q(n * 2 * d), k(m * d), v(m * d);
    PortableRandom generator(11);
    for (auto* x : {&q, &k, &v})
        for (float& value : *x) value = static_cast<float>(generator.normal());
    KeyMask mask;  // causal, and key 4 is padding
    for (std::size_t i = 0; i < n; ++i) {
        mask.first_key.push_back(0);
        mask.end_key.push_back(i + 1);
    }
    mask.key_valid.assign(m, 1);
    mask.key_valid[4] = 0;
    FastAttentionInput<float> in;
    in.q = q.data();
    in.k = k.data();
    in.v = v.data();
    in.q_stride = 2 * d;
    in.k_stride = in.v_stride = d;
    in.n = n;
    in.m = m;
    in.d_k = in.d_v = d;
    in.heads = 2;  // two query heads share the one KV head
    in.scale = 0.5;
    in.mask = &mask;
    std::vector<float> fast(n * 2 * d), naive(n * 2 * d);
    fast_attention(in, FastAttentionOutput<float>{fast.data()}, FastAttentionSettings{.block_q = 8, .block_k = 8, .threads = 2});
    const AttentionStats stats = naive_attention(in, FastAttentionOutput<float>{naive.data()}, 2);
    REQUIRE(stats.score_bytes_held == n * m * sizeof(float));
    for (std::size_t i = 0; i < fast.size(); ++i) REQUIRE(naive[i] == Approx(fast[i]).margin(1e-5));
    in.n = 5;  // 4 threads over 5 rows: blocks of 2, so 3 workers
    REQUIRE(naive_attention(in, FastAttentionOutput<float>{naive.data()}, 4).workers == 3);
    in.softcap = 1.0;
    REQUIRE_THROWS_AS(naive_attention(in, FastAttentionOutput<float>{naive.data()}, 2), std::invalid_argument);
}
