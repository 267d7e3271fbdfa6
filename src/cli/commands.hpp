#pragma once
// Each command adds its subcommand to the app and sets `exit_code` when it runs.
#include <CLI/CLI.hpp>

namespace attn_trace::cli {

void add_run_command(CLI::App& app, int& exit_code);
void add_check_command(CLI::App& app, int& exit_code);
void add_random_command(CLI::App& app, int& exit_code);

}  // namespace attn_trace::cli
