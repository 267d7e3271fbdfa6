// No abort, ever: whatever is thrown reaches report_error, which the CLI's main
// calls for every exception, and comes out as one line and an exit code
// (2 bad input, 3 backend, 4 a bug). Each exception type is fed in here, and a
// worker thread's exception comes back to the caller of parallel_for.
#include <algorithm>
#include <new>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "attn_trace/cli_words.hpp"
#include "attn_trace/errors.hpp"
#include "cli/report_error.hpp"
#include "attn_trace/parallel.hpp"

using namespace attn_trace;
using Catch::Contains;
using Catch::StartsWith;

namespace {

struct Reported {
    int exit_code;
    std::string text;
};

template <typename Throw>
Reported report(Throw&& throw_it) {
    std::ostringstream out;
    try {
        throw_it();
    } catch (...) {
        return {cli::report_error(std::current_exception(), out), out.str()};
    }
    FAIL("nothing was thrown");
    return {};
}

// nlohmann's own exceptions, as a forgotten check would let them out.
nlohmann::json::type_error json_type_error() {
    try {
        (void)nlohmann::json(5).at("tile");
    } catch (const nlohmann::json::type_error& e) {
        return e;
    }
    throw std::logic_error("expected a type_error");
}

}  // namespace

TEST_CASE("typed errors keep their exit codes and their messages") {
    auto input = report([] { throw InputError("p.json: $.Q: expected a matrix"); });
    CHECK(input.exit_code == 2);
    CHECK(input.text == "attn-trace: error: p.json: $.Q: expected a matrix\n");
    auto path = report([] { throw JsonPathError("p.json", "$.K[0]", "expected 2 items"); });
    CHECK(path.exit_code == 2);
    CHECK(path.text == "attn-trace: error: p.json: $.K[0]: expected 2 items\n");
    CHECK(report([] { throw BackendUnavailable("cuda: no GPU"); }).exit_code == 3);
    CHECK(report([] { throw Error("3 of 4 steps differ", 1); }).exit_code == 1);
}

TEST_CASE("running out of memory is exit 2 with advice, not an abort") {
    auto r = report([] { throw std::bad_alloc(); });
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.text, StartsWith("attn-trace: error: out of memory") && Contains("--max-memory"));
}

TEST_CASE("anything else is an internal error, exit 4, whatever its type") {
    auto json_error = report([] { throw json_type_error(); });
    CHECK(json_error.exit_code == 4);
    CHECK_THAT(json_error.text, StartsWith("attn-trace: internal error") && Contains("type_error.304"));
    auto logic = report([] { throw std::out_of_range("vector::_M_range_check"); });
    CHECK(logic.exit_code == 4);
    CHECK_THAT(logic.text, Contains("internal error") && Contains("vector::_M_range_check"));
    auto unknown = report([] { throw 42; });
    CHECK(unknown.exit_code == 4);
    CHECK_THAT(unknown.text, Contains("internal error") && Contains("unknown type"));
}

TEST_CASE("parallel_for rethrows a worker's exception on the calling thread", "[threads]") {
    for (int threads : {1, 2, 4}) {
        const auto work = [](std::size_t item, int) {
            if (item == 5) throw InputError("item 5");
        };
        CHECK_THROWS_WITH(parallel_for(64, threads, work), "item 5");
    }
    std::vector<int> done(100, 0);
    parallel_for(done.size(), 3, [&](std::size_t item, int) { done[item] = 1; });
    CHECK(std::count(done.begin(), done.end(), 1) == 100);
}

TEST_CASE("the library marks the settings it speaks of, the CLI words them as its flags", "[errors]") {
    const InputError error("⟦block_q⟧ 0: a query block holds at least 1 row (or set ⟦empty_rows⟧)");
    CHECK(std::string(error.what()) == "block_q 0: a query block holds at least 1 row (or set empty_rows)");
    const auto r = report([&] { throw error; });
    CHECK(r.exit_code == 2);
    CHECK(r.text == "attn-trace: error: --block-q 0: a query block holds at least 1 row (or set --empty-rows)\n");
    CHECK(cli_words("no marks, ⟦unclosed") == "no marks, ⟦unclosed");
    CHECK(cli_flag("max_memory") == "--max-memory");
}
