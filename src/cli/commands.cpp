#include "commands.hpp"

#include <algorithm>

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

}  // namespace attn_trace::cli
