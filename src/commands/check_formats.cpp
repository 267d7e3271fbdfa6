// check's report for machines (docs/COMMANDS.md#checks-that-ci-reads): JSON, JUnit XML and
// GitHub Actions' workflow commands, each from the same CheckReport as the text, so that
// their counts are the text's closing line's.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn_trace/check_command.hpp"
#include "attn_trace/cli_words.hpp"
#include "attn_trace/number_text.hpp"
#include "attn_trace/render_html.hpp"

namespace attn_trace {

namespace {

using json = nlohmann::ordered_json;

const char* status_of(const CheckedFile& f) { return !f.result ? "error" : f.result->passed() ? "pass" : "fail"; }

json step_json(const StepCheck& s) {
    const Comparison& c = s.comparison;
    json out = {{"step", s.label}, {"passed", s.passed()}, {"found", s.found}};
    if (!s.found) return out;
    out["expected_shape"] = {s.expected_rows, s.expected_cols};
    out["shape"] = {s.got_rows, s.got_cols};
    out["compared"] = c.compared;
    out["failed"] = c.failed;
    out["max_error"] = number_json(c.max_error);
    out["atol"] = s.tolerance.atol;
    out["rtol"] = s.tolerance.rtol;
    json mismatches = json::array();
    for (const auto& m : c.first_mismatches) mismatches.push_back({{"row", m.row}, {"col", m.col}, {"expected", number_json(m.want)}, {"got", number_json(m.got)}});
    out["mismatches"] = mismatches;
    out["more_mismatches"] = c.failed - c.first_mismatches.size();
    return out;
}

// The text of one file's outcome (render_checked_file's, and a bad file's error after it).
std::string file_text(const CheckedFile& f) {
    std::string text = render_checked_file(f);
    if (!f.result) text += cli_words(f.error) + "\n";
    return text;
}

// GitHub's workflow commands: a message escapes %, CR and LF; a property value : and , too.
std::string github_data(const std::string& text) {
    std::string out;
    for (char c : text) out += c == '%' ? "%25" : c == '\r' ? "%0D" : c == '\n' ? "%0A" : std::string(1, c);
    return out;
}
std::string github_property(const std::string& text) {
    std::string out;
    for (char c : github_data(text)) out += c == ':' ? "%3A" : c == ',' ? "%2C" : std::string(1, c);
    return out;
}

}  // namespace

std::string render_check_json(const CheckReport& report) {
    json files = json::array();
    for (const auto& f : report.files) {
        json file = {{"file", f.file}, {"status", status_of(f)}, {"seconds", f.seconds}};
        if (!f.result) {
            file["error"] = cli_words(f.error);
        } else {
            file["pipeline"] = f.result->command;
            json notes = json::array();
            for (const auto& note : f.result->notes) notes.push_back(cli_words(note));
            file["notes"] = notes;
            json steps = json::array();
            for (const auto& s : f.result->steps) steps.push_back(step_json(s));
            file["steps"] = steps;
        }
        files.push_back(file);
    }
    const json out = {{"attn_trace", 1}, {"command", "check"}, {"passed", report.passed()}, {"failed", report.failed()},
                      {"exit_code", report.exit_code()}, {"files", files}};
    return out.dump(1) + "\n";
}

std::string render_check_junit(const CheckReport& report) {
    std::size_t errors = 0;
    double seconds = 0;
    for (const auto& f : report.files) {
        errors += f.result ? 0 : 1;
        seconds += f.seconds;
    }
    const std::size_t failures = report.failed() - errors;
    const std::string counts = fmt::format("tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{:.6f}\"", report.files.size(), failures, errors, seconds);
    std::string xml = fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"attn-trace check\" {}>\n"
                                  "  <testsuite name=\"attn-trace check\" {}>\n",
                                  counts, counts);
    for (const auto& f : report.files) {
        const std::string classname = f.result ? "attn-trace.check." + f.result->command : "attn-trace.check";
        xml += fmt::format("    <testcase name=\"{}\" classname=\"{}\" time=\"{:.6f}\"", html_escape(f.file), classname, f.seconds);
        const bool notes = f.result && !f.result->notes.empty();
        if (f.result && f.result->passed() && !notes) {
            xml += "/>\n";
            continue;
        }
        xml += ">\n";
        if (!f.result) {
            xml += fmt::format("      <error message=\"{}\" type=\"bad input\"/>\n", html_escape(cli_words(f.error)));
        } else if (!f.result->passed()) {
            std::size_t failed = 0;
            for (const auto& s : f.result->steps) failed += s.passed() ? 0 : 1;
            xml += fmt::format("      <failure message=\"steps that differ: {} of {}\" type=\"mismatch\">{}</failure>\n", failed, f.result->steps.size(),
                               html_escape(file_text(f)));
        }
        if (notes) {
            std::string text;
            for (const auto& note : f.result->notes) text += "note: " + cli_words(note) + "\n";
            xml += "      <system-out>" + html_escape(text) + "</system-out>\n";
        }
        xml += "    </testcase>\n";
    }
    return xml + "  </testsuite>\n</testsuites>\n";
}

std::string render_check_github(const CheckReport& report) {
    std::string out;
    for (const auto& f : report.files) {
        const std::string where = "file=" + github_property(f.file);
        if (f.result)
            for (const auto& note : f.result->notes) out += fmt::format("::warning {},title={}::{}\n", where, github_property("attn-trace check: note"), github_data(cli_words(note)));
        if (!f.result)
            out += fmt::format("::error {},title={}::{}\n", where, github_property("attn-trace check: bad input"), github_data(file_text(f)));
        else if (!f.result->passed())
            out += fmt::format("::error {},title={}::{}\n", where, github_property("attn-trace check: " + f.result->command + " differs"), github_data(file_text(f)));
        else {
            const std::string text = render_checked_file(f);  // its notes are the warnings above
            out += text.substr(text.find("PASS"));
        }
    }
    return out + render_check_closing(report);
}

}  // namespace attn_trace
