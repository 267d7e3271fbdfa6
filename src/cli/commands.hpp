#pragma once
// Each command lives in its own file and registers itself here, so adding a
// command touches no other file. main() adds them to the app in `order`.
#include <vector>

#include <CLI/CLI.hpp>

namespace attn_trace::cli {

// Adds the subcommand to the app; its callback sets `exit_code` when it runs.
using AddCommand = void (*)(CLI::App& app, int& exit_code);

struct CommandRegistration {
    int order;  // position in --help: run 10, decode 20, tiled 30, explain 40, check 50, ...
    AddCommand add;
    CommandRegistration(int order, AddCommand add);
};

const std::vector<CommandRegistration>& registered_commands();

}  // namespace attn_trace::cli
