#pragma once
#include <cstddef>
#include <optional>
#include <vector>

namespace attn_trace {

// The number of values a shape holds, or nullopt when it passes `limit` — checked
// before each multiplication, so that no product of a file's extents can wrap around.
inline std::optional<std::size_t> count_within(const std::vector<std::size_t>& shape, std::size_t limit) {
    std::size_t count = 1;
    for (std::size_t extent : shape) {
        if (extent != 0 && count > limit / extent) return std::nullopt;
        count *= extent;
    }
    return count;
}

}  // namespace attn_trace
