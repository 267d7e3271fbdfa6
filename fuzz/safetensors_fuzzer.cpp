// Fuzz target 6: the safetensors reader. The bytes are parsed as a file; every
// tensor its header lists is read whole and in a slice. Errors are InputErrors.
#include <cstddef>
#include <cstdint>
#include <string>

#include "attn_trace/array_files.hpp"
#include "attn_trace/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace attn_trace;
    try {
        const SafetensorsFile file = SafetensorsFile::parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz.safetensors");
        for (const auto& tensor : file.tensors()) {
            for (const TensorSlice& slice : {TensorSlice{}, TensorSlice{std::array<std::size_t, 2>{0, 1}, std::array<std::size_t, 2>{1, 2}, true}}) {
                try {
                    (void)file.read(tensor.name, slice);
                } catch (const Error&) {
                }
            }
        }
    } catch (const Error&) {
    }
    return 0;
}
