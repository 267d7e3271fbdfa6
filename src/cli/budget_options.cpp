#include "budget_options.hpp"

#include <fmt/format.h>

#include "attn_trace/errors.hpp"

namespace attn_trace::cli {

void add_memory_option(CLI::App& command, Budget& budget, const std::string& refused) {
    command.add_option("--max-memory", budget.memory, fmt::format("refuse (exit 2) {} would hold more: SIZE as 4G, 512M or bytes", refused))
        ->transform(CLI::AsSizeValue(false))
        ->default_str("4G");
}

void add_output_option(CLI::App& command, Budget& budget) {
    command.add_option("--max-output", budget.output, "refuse (exit 2) to print more than SIZE (as 256M, 1G or bytes)")
        ->transform(CLI::AsSizeValue(false))
        ->default_str("256M");
}

std::size_t whole_number_option(const std::string& name, long long value, long long minimum) {
    if (value < minimum) throw InputError(fmt::format("{} {}: expected a whole number of at least {}", name, value, minimum));
    return static_cast<std::size_t>(value);
}

}  // namespace attn_trace::cli
