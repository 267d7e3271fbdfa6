// bench's memory estimate (docs/COMMANDS.md#bench): a run with a setting past the budget is
// refused before anything is measured, and the estimate bounds what a setting really holds,
// measured as the peak resident memory of a child process that runs it.
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "attn_trace/bench.hpp"
#include "attn_trace/errors.hpp"

using namespace attn_trace;

namespace {

// Peak resident memory is what the test measures, and a sanitizer's shadow memory and
// quarantine change it beyond any estimate: there the measuring test only says so.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool sanitized = true;
#else
constexpr bool sanitized = false;
#endif
#else
constexpr bool sanitized = false;
#endif

BenchConfig quiet(std::vector<std::string> impls) {
    BenchConfig c;
    c.lengths.clear();
    c.impls = std::move(impls);
    c.threads = 2;
    c.repeats = 2;  // two results exist at once only from the second run on
    c.warmup = 0;
    c.measure_roofs = false;
    return c;
}

// The peak resident bytes of a child process that runs `work` (fork, then wait4's rusage).
template <typename Work>
double child_peak_bytes(Work work) {
    malloc_trim(0);  // the child must not find the parent's freed, still resident heap to reuse
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        int status = 0;
        try {
            work();
        } catch (...) {
            status = 1;
        }
        _exit(status);
    }
    int status = 0;
    rusage usage{};
    REQUIRE(wait4(child, &status, 0, &usage) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    return static_cast<double>(usage.ru_maxrss) * 1024;  // kilobytes on Linux
}

}  // namespace

TEST_CASE("bench refuses a run with a setting past --max-memory, before measuring, with the estimate's parts", "[bench][memory]") {
    BenchConfig c = quiet({"fast"});
    c.backward = true;
    c.lengths = {1024, 1048576};
    c.heads = 8;
    try {
        run_bench(c, [](std::size_t, std::size_t, const std::string&, int, int) { FAIL("a setting ran before the refusal"); });
        FAIL("no refusal");
    } catch (const InputError& e) {
        CHECK(e.exit_code() == 2);
        const std::string text = e.marked();
        CHECK_THAT(text, Catch::Contains("the backward setting n = 1048576 with fast would hold about"));
        CHECK_THAT(text, Catch::Contains("inputs 16.0 GiB"));  // Q, K, V and d_out: 2^20 · 8 · 64 doubles each
        CHECK_THAT(text, Catch::Contains("the limit is 4.0 GiB (⟦max_memory⟧)"));
        CHECK_THAT(text, Catch::Contains("lower ⟦n⟧, ⟦heads⟧, ⟦kv_heads⟧ or ⟦dk⟧ (or ⟦threads⟧, ⟦block_q⟧ and ⟦block_k⟧)"));
    }
    // Without the large setting the same run passes the check and runs.
    c.lengths = {256};
    CHECK_NOTHROW(run_bench(c, nullptr));
    // A decode cache names --cache; a naive setting skipped for its scores is not counted.
    BenchConfig d = quiet({"fast"});
    d.cache_lengths = {1u << 24};
    d.heads = 32;
    d.kv_heads = 8;
    d.d_k = 128;
    REQUIRE_THROWS_WITH(run_bench(d, nullptr), Catch::Contains("the decode setting T = 16777216 with fast") && Catch::Contains("lower cache, heads"));
    // An implementation that will be reported unavailable holds only the inputs, which are drawn all the same.
    BenchConfig unavailable = quiet({"cuda"});  // no backward on the cuda backend, with or without a GPU
    unavailable.backward = true;
    unavailable.lengths = {1u << 20};
    unavailable.heads = 8;
    REQUIRE_THROWS_WITH(run_bench(unavailable, nullptr), Catch::Contains("with cuda would hold about 17.0 GiB (inputs 16.0 GiB, the kernel's buffers 0 KiB"));
    unavailable.lengths = {4096};
    unavailable.heads = 1;
    unavailable.memory_budget_bytes = 9 << 20;  // the inputs' 8 MiB (and a sixteenth), not fast's buffers beside them
    REQUIRE(bench_memory(unavailable, {BenchMode::backward, 4096}, "cuda").total() > unavailable.memory_budget_bytes);
    const BenchRun none = run_bench(unavailable, nullptr);
    REQUIRE(none.results.size() == 1);
    CHECK(none.results[0].status == "unavailable");
    BenchConfig naive = quiet({"naive"});
    naive.lengths = {1024};  // 4 MiB of scores, over a 1 MiB naive budget: skipped, so not counted
    naive.naive_budget_bytes = 1 << 20;
    naive.memory_budget_bytes = 2 << 20;
    REQUIRE(bench_memory(naive, {BenchMode::forward, 1024}, "naive").total() > naive.memory_budget_bytes);
    const BenchRun run = run_bench(naive, nullptr);
    REQUIRE(run.results.size() == 1);
    CHECK(run.results[0].status == "skipped");
}

TEST_CASE("bench's memory estimate bounds the measured peak of each kind of setting, within 1.5x", "[bench][memory]") {
    if (sanitized) {
        WARN("built with a sanitizer: peak resident memory is not the program's own, not measured");
        return;
    }
    const double baseline = child_peak_bytes([] {});
    struct Case {
        const char* name;
        BenchConfig config;
    };
    std::vector<Case> cases;
    {
        BenchConfig c = quiet({"fast"});  // forward, f32: inputs 192 MiB
        c.lengths = {2048};
        c.heads = 64;
        cases.push_back({"forward fast f32", c});
        c.dtype = Dtype::f64;
        c.lengths = {1024};
        cases.push_back({"forward fast f64", c});
    }
    {
        BenchConfig c = quiet({"naive"});  // 64 MiB of scores beside 96 MiB of inputs
        c.lengths = {4096};
        c.heads = 8;
        cases.push_back({"forward naive f32", c});
    }
    {
        BenchConfig c = quiet({"fast"});  // backward under GQA: per-worker dQ for 4 query heads
        c.backward = true;
        c.lengths = {2048};
        c.heads = 32;
        c.kv_heads = 8;
        cases.push_back({"backward fast f32", c});
        c.dtype = Dtype::f64;
        c.lengths = {1024};
        cases.push_back({"backward fast f64", c});
    }
    {
        BenchConfig c = quiet({"fast"});  // narrow heads (padded to whole vectors), short tiles, causal, GQA
        c.lengths = {4096};
        c.heads = 64;
        c.kv_heads = 16;
        c.d_k = 4;
        c.block_k = 8;
        c.causal = true;
        cases.push_back({"forward fast f32, d_k 4, Bc 8, causal, GQA", c});
    }
    {
        BenchConfig c = quiet({"fast"});  // one backward tile of 4096 × 4096: P and dP are 128 MiB
        c.backward = true;
        c.lengths = {4096};
        c.block_q = c.block_k = 4096;
        cases.push_back({"backward fast f32, Br = Bc = n", c});
    }
    {
        BenchConfig c = quiet({"fast"});  // decode: the cache dominates, with its float copy
        c.cache_lengths = {16384};
        c.heads = 32;
        c.kv_heads = 8;
        c.d_k = 128;
        cases.push_back({"decode fast f32", c});
        c.dtype = Dtype::f64;
        cases.push_back({"decode fast f64", c});
    }
    for (const Case& item : cases) {
        const BenchSetting setting = bench_settings(item.config).front();  // the one setting of each case
        const double estimate = bench_memory(item.config, setting, item.config.impls.front()).total();
        const double held = child_peak_bytes([&] { run_bench(item.config, nullptr); }) - baseline;
        INFO(item.name << ": estimate " << estimate / (1 << 20) << " MiB, measured " << held / (1 << 20) << " MiB above the baseline");
        CHECK(held <= estimate);
        CHECK(estimate <= 1.5 * held);
    }
}

TEST_CASE("bench draws no inputs for a setting that no implementation runs", "[bench][memory]") {
    if (sanitized) {
        WARN("built with a sanitizer: peak resident memory is not the program's own, not measured");
        return;
    }
    const double baseline = child_peak_bytes([] {});
    BenchConfig c = quiet({"naive"});  // skipped at n = 2^20 (4 TiB of scores); Q, K and V would be 1.5 GiB of doubles
    c.lengths = {std::size_t{1} << 20};
    const double peak = child_peak_bytes([&] {
        const BenchRun run = run_bench(c, BenchProgress{});
        if (run.results.size() != 1 || run.results[0].status != "skipped") throw std::runtime_error("expected one skipped result");
    });
    CHECK(peak - baseline < 64.0 * (1 << 20));
}
