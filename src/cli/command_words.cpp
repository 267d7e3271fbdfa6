// `words`, a hidden command: the words the shell completion offers (docs/COMMANDS.md#installing),
// asked of the binary itself so that completion never lags behind it:
//   attn-trace words commands | steps | topics | formats | options COMMAND
#include <iostream>

#include "attn_trace/errors.hpp"
#include "attn_trace/exercise.hpp"
#include "attn_trace/format_table.hpp"
#include "attn_trace/trace.hpp"
#include "commands.hpp"

namespace attn_trace::cli {

namespace {

void add_words_command(CLI::App& app, int& exit_code) {
    static std::vector<std::string> what;
    auto* words = app.add_subcommand("words", "the words shell completion offers");
    words->group("");  // hidden from --help: it is for the completion script
    words->add_option("KIND", what, "commands, steps, topics, formats, or options COMMAND")->required()->expected(1, 2);
    words->callback([&app, &exit_code] {
        const auto print = [](const std::vector<std::string>& list) {
            for (const auto& word : list) std::cout << word << "\n";
        };
        const std::string kind = what[0];
        if (kind == "commands") {
            for (const auto* command : app.get_subcommands([](CLI::App* c) { return !c->get_group().empty(); })) std::cout << command->get_name() << "\n";
        } else if (kind == "steps") {
            print(step_names());
        } else if (kind == "topics") {
            print(exercise_topics());
        } else if (kind == "formats") {
            for (Format format : formats_of(for_trace)) std::cout << format << "\n";
        } else if (kind == "options" && what.size() == 2) {
            const auto found = app.get_subcommands([&](CLI::App* c) { return c->get_name() == what[1]; });
            if (found.empty()) throw InputError("words options: no command '" + what[1] + "'");
            const CLI::App* command = found.front();
            for (const auto* option : command->get_options())
                for (const auto& name : option->get_lnames()) std::cout << "--" << name << "\n";
        } else {
            throw InputError("words: expected commands, steps, topics, formats or options COMMAND");
        }
        exit_code = 0;
    });
}

const CommandRegistration registration{200, add_words_command};

}  // namespace

}  // namespace attn_trace::cli
