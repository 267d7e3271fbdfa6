#pragma once
// Each command lives in its own file and registers itself here, so adding a
// command touches no other file. main() adds them to the app in `order`.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "attn_trace/format_table.hpp"

namespace attn_trace::cli {

// Adds the subcommand to the app; its callback sets `exit_code` when it runs.
using AddCommand = void (*)(CLI::App& app, int& exit_code);

struct CommandRegistration {
    int order;  // position in --help: run 10, decode 20, tiled 30, explain 40, check 50, ...
    AddCommand add;
    CommandRegistration(int order, AddCommand add);
};

const std::vector<CommandRegistration>& registered_commands();

// --format, parsed into `format` once (its default is the value `format` holds): a
// name outside `accepted` is CLI11's "not in {…}" error, listing them in that order.
CLI::Option* add_format_option(CLI::App& command, Format& format, const std::vector<Format>& accepted, const std::string& description);

// Every option of an unsigned type refuses a negative value, named (main() calls it once
// every command is added).
void refuse_negative_counts(CLI::App& app);

}  // namespace attn_trace::cli
