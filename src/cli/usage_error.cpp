#include "usage_error.hpp"

#include <regex>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attn_trace/nearest_word.hpp"
#include "attn_trace/split_list.hpp"

namespace attn_trace::cli {

namespace {

// The subcommand the arguments named, or the app itself when none was.
const CLI::App& command_of(const CLI::App& app) {
    for (const CLI::App* sub : app.get_subcommands()) return *sub;
    return app;
}

std::vector<std::string> option_names(const CLI::App& command) {
    std::vector<std::string> names;
    for (const CLI::Option* option : command.get_options())
        for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    return names;
}

std::vector<std::string> command_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands({}))
        if (!sub->get_group().empty()) names.push_back(sub->get_name());  // a hidden command (the completion's words) is not offered
    return names;
}

// The command's usage line, "Usage: attn-trace run [OPTIONS] PROBLEM", and where its options are listed.
std::string help_hint(const CLI::App& app, const CLI::App& command) {
    const std::string name = &command == &app ? "attn-trace" : "attn-trace " + command.get_name();
    std::string usage = CLI::Formatter().make_usage(&command, name);
    while (!usage.empty() && usage.back() == '\n') usage.pop_back();
    return fmt::format("\n{} ({} --help lists the options)", usage, name);
}

}  // namespace

std::string usage_error_text(const CLI::ParseError& error, const CLI::App& app) {
    const CLI::App& command = command_of(app);
    const std::string hint = help_hint(app, command);
    // An argument nothing takes: an unknown option (the nearest one named) or a stray word.
    if (dynamic_cast<const CLI::ExtrasError*>(&error)) {
        std::vector<std::string> parts;
        for (const std::string& extra : command.remaining()) {
            const bool option = extra.rfind("-", 0) == 0;
            const std::string flag = extra.substr(0, extra.find('='));
            const std::string near = option ? did_you_mean(flag, option_names(command))
                                     : &command == &app ? did_you_mean(extra, command_names(app))
                                                        : "";
            parts.push_back(fmt::format("{} '{}'{}", option ? "unknown option" : &command == &app ? "unknown command" : "unexpected argument", extra, near));
        }
        if (!parts.empty()) return fmt::format("attn-trace: error: {}{}", fmt::join(parts, "; "), hint);
    }
    const std::string what = error.what();
    // CLI11's "--format: jsn not in {text,json,...}" (a closed set of values).
    static const std::regex not_in(R"((\S+): (.*) not in \{(.*)\})");
    std::smatch m;
    if (std::regex_match(what, m, not_in)) {
        const std::vector<std::string> known = split_list(m[3].str(), ',');
        return fmt::format("attn-trace: error: {} '{}'{}: expected one of {}{}", m[1].str(), m[2].str(), did_you_mean(m[2].str(), known),
                           fmt::join(known, ", "), hint);
    }
    // Our validators' "--seed: '-1': expected …" (refuse_negative_counts), in the form below.
    static const std::regex validated(R"((--\S+): '(.*)': (expected .*))");
    if (std::regex_match(what, m, validated)) return fmt::format("attn-trace: error: {} '{}': {}{}", m[1].str(), m[2].str(), m[3].str(), hint);
    // CLI11's "Could not convert: --head = x" and "--atol: Value x not in range 0.000000 to
    // 1797…" (a bound of DBL_MAX written out): what the option takes, from its type and range.
    static const std::regex not_converted(R"(Could not convert: (\S+) = (.*))"), out_of_range(R"((\S+): Value (.*) not in range (\S+) to (\S+))");
    const bool converted = std::regex_match(what, m, not_converted);
    if (converted || std::regex_match(what, m, out_of_range)) {
        const CLI::Option* option = command.get_option_no_throw(m[1].str());
        const std::string type = option ? option->get_type_name() : "";
        const bool whole = type.rfind("UINT", 0) == 0 || type.rfind("INT", 0) == 0;
        std::string expected = whole ? "a whole number" : "a number";
        if (!converted) {
            const double low = std::stod(m[3].str()), high = std::stod(m[4].str());
            expected += high >= 1e300 ? fmt::format(" of at least {:g}", low) : fmt::format(" from {} to {}", m[3].str(), m[4].str());
        }
        return fmt::format("attn-trace: error: {} '{}': expected {}{}{}", m[1].str(), m[2].str(), expected,
                           option && option->get_expected_max() > 1 ? " (or several, comma-separated)" : "", hint);
    }
    if (dynamic_cast<const CLI::RequiredError*>(&error) && &command == &app) {
        const std::vector<std::string> words = app.remaining();
        if (!words.empty() && words.front().rfind("-", 0) != 0)
            return fmt::format("attn-trace: error: unknown command '{}'{}: expected one of {}{}", words.front(),
                               did_you_mean(words.front(), command_names(app)), fmt::join(command_names(app), ", "), hint);
        return fmt::format("attn-trace: error: name a command: {}{}", fmt::join(command_names(app), ", "), hint);
    }
    return fmt::format("attn-trace: error: {}{}", what, hint);
}

}  // namespace attn_trace::cli
