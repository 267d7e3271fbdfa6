// The test runner. A per-target run (CTest's kernel_avx512, kernel_avx2,
// kernel_baseline set ATTN_TRACE_KERNEL) of a target this CPU cannot run is
// skipped, exit 77 (CTest's SKIP_RETURN_CODE), not failed: it says so and why.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include <fmt/format.h>

#include "attn_trace/cpu_kernel.hpp"

int main(int argc, char* argv[]) {
    const char* forced = std::getenv("ATTN_TRACE_KERNEL");
    if (forced != nullptr && *forced != '\0') {
        const auto supported = attn_trace::supported_kernel_target_names();
        if (std::find(supported.begin(), supported.end(), forced) == supported.end()) {
            std::cout << fmt::format("SKIP: ATTN_TRACE_KERNEL={}: this CPU runs {} only\n", forced, fmt::join(supported, ", "));
            return 77;
        }
    }
    return Catch::Session().run(argc, argv);
}
