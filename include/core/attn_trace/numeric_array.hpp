#pragma once
#include <cstddef>
#include <vector>

namespace attn_trace {

// A numeric array of 1 to 3 dimensions, row-major, widened to f64: what every
// matrix form of a problem file (nested lists, shape + data, random, .npy,
// safetensors) reads into.
// The most values one array may hold (2^28, 2 GiB as f64), whichever form it comes in.
inline constexpr std::size_t max_array_values = std::size_t{1} << 28;

struct NumericArray {
    std::vector<std::size_t> shape;
    std::vector<double> data;
};

}  // namespace attn_trace
