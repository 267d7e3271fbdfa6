// Fuzz target 5: the .npy reader. Any bytes are either an array whose size matches
// its shape or an InputError; never a crash, a read past the end, or a hang.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "attn_trace/array_files.hpp"
#include "attn_trace/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const auto array = attn_trace::parse_npy(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.npy");
        std::size_t count = 1;
        for (std::size_t extent : array.shape)
            if (__builtin_mul_overflow(count, extent, &count)) __builtin_trap();  // a shape past size_t: the reader let it through
        if (count != array.data.size()) __builtin_trap();  // the reader's own promise
    } catch (const attn_trace::Error&) {
    }
    return 0;
}
