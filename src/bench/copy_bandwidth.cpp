// The memory roof of bench's roofline (docs/PERFORMANCE.md#the-roofline). A copy is what
// attention's streams do (read the inputs, write the output) with no arithmetic; it is
// counted as bytes read plus bytes written, the way the roofline counts a setting's bytes.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "attn_trace/parallel.hpp"
#include "attn_trace/roofline.hpp"

namespace attn_trace {

double copy_bandwidth_gb_per_s(int threads) {
    // 256 MiB: far past any last-level cache here (32 MiB on the Zen 4 and Xeon machines).
    const std::size_t bytes = std::size_t{256} << 20;
    const int workers = std::max(1, threads);
    const std::size_t slice = bytes / static_cast<std::size_t>(workers);
    std::vector<char> from(bytes), to(bytes);  // zero-filled: every page is touched before the timing
    std::fill(from.begin(), from.end(), 1);
    double best = 0;
    for (int run = 0; run < 4; ++run) {  // the best of four: noise only ever slows a copy
        const auto start = std::chrono::steady_clock::now();
        parallel_for(static_cast<std::size_t>(workers), workers, [&](std::size_t part, int) {
            const std::size_t first = part * slice, count = part + 1 == static_cast<std::size_t>(workers) ? bytes - first : slice;
            std::memcpy(to.data() + first, from.data() + first, count);
        });
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::max(best, 2.0 * static_cast<double>(bytes) / seconds / 1e9);
    }
    if (to[bytes / 2] != 1) best = 0;  // reads the copy, so that it cannot be left out
    return best;
}

}  // namespace attn_trace
