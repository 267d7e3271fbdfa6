#pragma once
// A whole file as bytes: memory-mapped, so that a checkpoint of gigabytes costs
// only the pages of the tensors read from it.
#include <memory>
#include <string>
#include <string_view>

namespace attn_trace {

struct MappedFile {
    std::shared_ptr<const void> owner;  // unmaps when the last holder goes
    std::string_view bytes;
};

// Throws InputError naming the file when it cannot be opened or mapped.
MappedFile map_file(const std::string& path, const std::string& what);

}  // namespace attn_trace
