#pragma once
// Every byte size the program words, in one place (docs/ARCHITECTURE.md#one-place-each).
// Three styles, each for its readers: a message names one size in the binary unit
// that suits it (size_text); a sentence that sets a small size beside a huge one
// names each in the unit it chooses (size_text with a unit); the cost reports give
// the exact count with its decimal and binary figures, since teaching texts tabulate
// memory in MB and allocators in MiB (bytes_text).
#include <string>

namespace attn_trace {

enum class ByteUnit { KiB, MiB, GiB };

// "1.4 GiB", "348 MiB", "16 KiB": GiB to one decimal, MiB and KiB whole; below
// 1 KiB still in KiB ("0 KiB").
std::string size_text(double bytes);

// In `unit`, to three significant digits: "0.0625 MiB", "2 GiB".
std::string size_text(double bytes, ByteUnit unit);

// "512 bytes", "1,000 bytes = 1 kB", "6,144 bytes = 6.144 kB (6 KiB)",
// "230,400 bytes = 230.4 kB = 0.23 MB (225 KiB)",
// "4,194,304 bytes = 4.19 MB (4.00 MiB)", "2,147,483,648 bytes = 2.15 GB (2.00 GiB)".
std::string bytes_text(double bytes);

}  // namespace attn_trace
