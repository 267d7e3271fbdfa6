#include "attn_trace/size_text.hpp"

#include <fmt/format.h>

#include "attn_trace/number_text.hpp"

namespace attn_trace {

namespace {

double unit_bytes(ByteUnit unit) { return unit == ByteUnit::GiB ? 1 << 30 : unit == ByteUnit::MiB ? 1 << 20 : 1 << 10; }
const char* unit_name(ByteUnit unit) { return unit == ByteUnit::GiB ? "GiB" : unit == ByteUnit::MiB ? "MiB" : "KiB"; }

// The largest unit the size reaches, KiB below 1 MiB.
ByteUnit unit_of(double bytes) { return bytes >= unit_bytes(ByteUnit::GiB) ? ByteUnit::GiB : bytes >= unit_bytes(ByteUnit::MiB) ? ByteUnit::MiB : ByteUnit::KiB; }

}  // namespace

std::string size_text(double bytes) {
    const ByteUnit unit = unit_of(bytes);
    return fmt::format("{:.{}f} {}", bytes / unit_bytes(unit), unit == ByteUnit::GiB ? 1 : 0, unit_name(unit));
}

std::string size_text(double bytes, ByteUnit unit) { return fmt::format("{:.3g} {}", bytes / unit_bytes(unit), unit_name(unit)); }

// The natural decimal unit first (kB below a megabyte, GB above a gigabyte), the MB
// figure beside kB from 0.01 MB on (teaching texts tabulate score memory in MB), and
// the binary unit in parentheses from a KiB on (a KV cache per token is sized in KiB
// by allocators and model cards): no "0.00 MB", no 2147.48 MB.
std::string bytes_text(double bytes) {
    if (bytes < 1e3) return fmt::format("{} bytes", grouped(bytes));
    std::string text = grouped(bytes) + " bytes = ";
    if (bytes < 1e6) {
        text += fmt::format("{:.4g} kB", bytes / 1e3);
        if (bytes >= 1e4) text += fmt::format(" = {:.2f} MB", bytes / 1e6);
    } else {
        text += bytes < 1e9 ? fmt::format("{:.2f} MB", bytes / 1e6) : fmt::format("{:.2f} GB", bytes / 1e9);
    }
    if (bytes < unit_bytes(ByteUnit::KiB)) return text;  // 1,000 to 1,023 bytes: under one KiB
    const ByteUnit unit = unit_of(bytes);
    return text + (unit == ByteUnit::KiB ? fmt::format(" ({:.4g} KiB)", bytes / unit_bytes(unit))
                                         : fmt::format(" ({:.2f} {})", bytes / unit_bytes(unit), unit_name(unit)));
}

}  // namespace attn_trace
