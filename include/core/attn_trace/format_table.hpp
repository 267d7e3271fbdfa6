#pragma once
// The format table (docs/COMMANDS.md#output-formats): every output format, once: its
// name, what it is for, and the commands whose --format accepts it. Code names a
// format by Format and switches on it, so that -Wswitch names every renderer a new
// format must reach; its text is read once, where --format is parsed (find_format),
// and written where people read it.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace attn_trace {

// The commands whose --format accepts a format (docs/COMMANDS.md); run, decode,
// tiled, grad and permute print a trace and share one list.
enum FormatCommands : unsigned { for_trace = 1, for_explain = 2, for_exercise = 4, for_cost = 8, for_variance = 16, for_bench = 32, for_precision = 64, for_view = 128 };

// X(name, what it is, commands), in the order --format lists them for a trace.
#define ATTN_TRACE_FORMATS(X)                                                                                                                      \
    X(text, "for people: aligned tables and prose", for_trace | for_explain | for_exercise | for_cost | for_variance | for_bench | for_precision | for_view) \
    X(json, "for scripts: one object; a trace in it is what check --golden reads",                                                               \
      for_trace | for_exercise | for_cost | for_variance | for_bench | for_precision | for_view)                                                  \
    X(markdown, "a worksheet: GitHub renders its tables and maths", for_trace | for_explain | for_exercise | for_precision)                        \
    X(latex, "a fragment that compiles in a plain article with amsmath", for_trace | for_explain | for_exercise | for_precision)                   \
    X(csv, "comma-separated values: one step's matrix, or bench's measurements", for_trace | for_bench)                                            \
    X(html, "a page of its own, to explore", for_trace | for_explain | for_exercise | for_view)

enum class Format : std::uint8_t {
#define ATTN_TRACE_FORMAT_ID(name, what, commands) name,
    ATTN_TRACE_FORMATS(ATTN_TRACE_FORMAT_ID)
#undef ATTN_TRACE_FORMAT_ID
};

struct FormatInfo {
    Format id;
    std::string name;  // as people type and read it
    std::string_view what;
    unsigned commands;  // FormatCommands bits
};

const std::vector<FormatInfo>& format_table();
const FormatInfo& format_info(Format format);
inline const std::string& format_name(Format format) { return format_info(format).name; }
// The one lookup of a format by its text: nullopt for a name that is no format.
std::optional<Format> find_format(std::string_view name);
// The formats a command accepts (FormatCommands bits), in table order: for
// --format's check, its messages and completion.
std::vector<Format> formats_of(unsigned commands);
inline bool accepts(unsigned commands, Format format) { return (format_info(format).commands & commands) != 0; }

// A stream writes a Format as its name too (test frameworks print values this way).
std::ostream& operator<<(std::ostream& out, Format format);

}  // namespace attn_trace

// fmt writes a Format as its name, so messages need no lookup.
template <>
struct fmt::formatter<attn_trace::Format> : fmt::formatter<std::string_view> {
    template <typename Context>
    auto format(attn_trace::Format format, Context& ctx) const {
        return fmt::formatter<std::string_view>::format(std::string_view(attn_trace::format_name(format)), ctx);
    }
};
