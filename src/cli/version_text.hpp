#pragma once
#include <string>

namespace attn_trace::cli {

// What --version prints (docs/COMMANDS.md#commands): the version, the build type, the CPU kernel
// and what this CPU offers it, and whether CUDA is built in and a GPU usable.
std::string version_text();

}  // namespace attn_trace::cli
