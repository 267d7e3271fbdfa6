#include "commands.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <system_error>

#include <fmt/format.h>

namespace attn_trace::cli {

namespace {
// A function-local static: safe to use from other files' static initialisers.
std::vector<CommandRegistration>& registry() {
    static std::vector<CommandRegistration> commands;
    return commands;
}
}  // namespace

CommandRegistration::CommandRegistration(int order_, AddCommand add_) : order(order_), add(add_) {
    auto& commands = registry();
    commands.push_back(*this);
    std::sort(commands.begin(), commands.end(), [](const auto& a, const auto& b) { return a.order < b.order; });
}

const std::vector<CommandRegistration>& registered_commands() { return registry(); }

CLI::Option* add_format_option(CLI::App& command, Format& format, const std::vector<Format>& accepted, const std::string& description) {
    std::vector<std::string> names;
    for (Format f : accepted) names.push_back(format_name(f));
    // The check runs before the callback, so find_format always finds the name.
    return command.add_option_function<std::string>("--format", [&format](const std::string& name) { format = *find_format(name); }, description)
        ->check(CLI::IsMember(names))
        ->default_str(format_name(format));
}

void refuse_negative_counts(CLI::App& app) {
    // CLI11 reads "-1" into an unsigned option as 2^64 − 1 (--seed -1 wrote a seed no
    // problem file takes, --max-memory -5 lifted the limit) and caps a number past 2^64 − 1
    // at it: both are refused before the value is converted (and before a SIZE's transform).
    const CLI::Validator in_range(
        [](std::string& value) {
            if (!value.empty() && value.front() == '-') return "'" + value + "': expected a whole number (this option takes no negative value)";
            std::uint64_t parsed = 0;
            const bool digits = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
            if (digits && std::from_chars(value.data(), value.data() + value.size(), parsed).ec == std::errc::result_out_of_range)
                return fmt::format("'{}': expected a whole number of at most {}", value, std::numeric_limits<std::uint64_t>::max());
            return std::string();
        },
        "");
    for (CLI::App* command : app.get_subcommands({}))
        for (CLI::Option* option : command->get_options())
            if (option->get_type_name().rfind("UINT", 0) == 0) option->check(in_range);
}

}  // namespace attn_trace::cli
