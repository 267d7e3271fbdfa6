#include "mapped_file.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "attn_trace/errors.hpp"

namespace attn_trace {

MappedFile map_file(const std::string& path, const std::string& what) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw InputError(fmt::format("{}: cannot open the {} ({})", path, what, std::strerror(errno)));
    struct stat info {};
    if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
        ::close(fd);
        throw InputError(fmt::format("{}: the {} is not a regular file", path, what));
    }
    const std::size_t size = static_cast<std::size_t>(info.st_size);
    if (size == 0) {
        ::close(fd);
        return {nullptr, {}};
    }
    void* address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);  // the mapping stays valid without the descriptor
    if (address == MAP_FAILED) throw InputError(fmt::format("{}: cannot map the {} ({})", path, what, std::strerror(errno)));
    std::shared_ptr<const void> owner(address, [size](const void* a) { ::munmap(const_cast<void*>(a), size); });
    return {owner, std::string_view(static_cast<const char*>(address), size)};
}

}  // namespace attn_trace
