#include "size_text.hpp"

#include <fmt/format.h>

namespace attn_trace::cli {

std::string size_text(double bytes) {
    if (bytes >= (1 << 30)) return fmt::format("{:.1f} GiB", bytes / (1 << 30));
    if (bytes >= (1 << 20)) return fmt::format("{:.0f} MiB", bytes / (1 << 20));
    return fmt::format("{:.0f} KiB", bytes / (1 << 10));
}

}  // namespace attn_trace::cli
