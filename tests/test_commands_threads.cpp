// The commands layer called from several threads at once, as the Python package calls it
// with the GIL released (docs/PYTHON.md#commands): each call's own thread pool beside the
// others', no shared state between calls. Under ThreadSanitizer (SANITIZE=thread bash
// tools/test.sh runs [threads]) a data race fails the test; everywhere, every thread's
// numbers must equal the same call made alone.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "attn_trace/sdpa_command.hpp"
#include "attn_trace/trace_commands.hpp"
#include "test_helpers.hpp"

namespace attn_trace {

namespace {

const std::string causal_problem = testing::damaged_keys + R"(, "mask": "causal"})";

// Every number of every step, one after another.
std::vector<double> traced_numbers(bool fast) {
    RunRequest request;
    request.fast = fast;
    ProblemSource source;
    source.text = causal_problem;
    source.label = "<threads>";
    std::vector<double> numbers;
    for (const Step& step : run_command(load_with_overrides(source, {}), request).trace.steps)
        numbers.insert(numbers.end(), step.values.data().begin(), step.values.data().end());
    return numbers;
}

// Attention of a (1, 2, 64, 8) query over 64 keys, causal, on `threads` threads of its own.
std::vector<double> sdpa_out(int threads) {
    const std::size_t L = 64, E = 8;
    std::vector<double> q(2 * L * E), k(2 * L * E), v(2 * L * E);
    for (std::size_t i = 0; i < q.size(); ++i) {
        q[i] = std::sin(0.37 * static_cast<double>(i));
        k[i] = std::cos(0.11 * static_cast<double>(i));
        v[i] = std::sin(0.05 * static_cast<double>(i) + 1);
    }
    SdpaRequest r;
    r.heads = r.kv_heads = 2;
    r.L = r.S = L;
    r.E = r.Ev = E;
    r.query = q.data();
    r.key = k.data();
    r.value = v.data();
    r.is_causal = true;
    r.scale = 1 / std::sqrt(8.0);
    r.threads = threads;
    std::vector<double> out(2 * L * E);
    sdpa_command(r, out.data());
    return out;
}

}  // namespace

TEST_CASE("run, run --fast and sdpa called from four threads at once equal each alone", "[threads]") {
    const auto full = traced_numbers(false), fast = traced_numbers(true);
    const auto sdpa = sdpa_out(2);
    REQUIRE(!full.empty());
    REQUIRE(!fast.empty());
    std::vector<std::vector<double>> got_full(4), got_fast(4), got_sdpa(4);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            got_full[t] = traced_numbers(false);
            got_fast[t] = traced_numbers(true);
            got_sdpa[t] = sdpa_out(2);
        });
    for (std::thread& thread : threads) thread.join();
    for (std::size_t t = 0; t < 4; ++t) {
        CHECK(got_full[t] == full);
        CHECK(got_fast[t] == fast);
        CHECK(got_sdpa[t] == sdpa);
    }
}

}  // namespace attn_trace
