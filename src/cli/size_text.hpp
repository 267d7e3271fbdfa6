#pragma once
// A size in binary units for a message or a table: "1.4 GiB", "348 MiB", "16 KiB".
// (cost's figures, in decimal and binary units side by side, are cost_report's own.)
#include <string>

namespace attn_trace::cli {

std::string size_text(double bytes);

}  // namespace attn_trace::cli
