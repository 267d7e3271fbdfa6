#include "attn_trace/format_table.hpp"

#include <ostream>

namespace attn_trace {

const std::vector<FormatInfo>& format_table() {
    static const std::vector<FormatInfo> table = {
#define ATTN_TRACE_FORMAT_INFO(name, what, commands) {Format::name, #name, what, commands},
        ATTN_TRACE_FORMATS(ATTN_TRACE_FORMAT_INFO)
#undef ATTN_TRACE_FORMAT_INFO
    };
    return table;
}

const FormatInfo& format_info(Format format) { return format_table().at(static_cast<std::size_t>(format)); }

std::optional<Format> find_format(std::string_view name) {
    for (const auto& info : format_table())
        if (info.name == name) return info.id;
    return std::nullopt;
}

std::vector<Format> formats_of(unsigned commands) {
    std::vector<Format> formats;
    for (const auto& info : format_table())
        if (info.commands & commands) formats.push_back(info.id);
    return formats;
}

std::ostream& operator<<(std::ostream& out, Format format) { return out << format_name(format); }

}  // namespace attn_trace
