#pragma once
// What every fuzz target shares: which inputs ask for non-finite numbers to be
// traced, and the sizes past which a target stops after loading (the loader's own
// limits are what target 1 tests; the pipelines are run only on small problems,
// so that each input takes milliseconds and the fuzzer explores shapes, masks and
// options rather than arithmetic on big matrices).
#include <algorithm>
#include <string>

#include "attn_trace/problem.hpp"

namespace attn_trace::fuzz {

// Half the inputs, chosen by their content so that a saved input replays the same
// way: those that mention "nan" or "inf" are loaded with allow_nonfinite.
inline bool allow_nonfinite(const std::string& text) {
    return text.find("nan") != std::string::npos || text.find("inf") != std::string::npos;
}

inline bool small_enough(const Problem& p) {
    const std::size_t width = std::max({p.d_model, p.d_src, p.d_k * static_cast<std::size_t>(p.heads), p.d_v * static_cast<std::size_t>(p.heads)});
    return p.n <= 24 && p.m <= 24 && p.batch <= 3 && p.heads <= 8 && width <= 64;
}

}  // namespace attn_trace::fuzz
