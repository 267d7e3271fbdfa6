#include "attn_trace/check_command.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn_trace/cli_words.hpp"
#include "attn_trace/errors.hpp"
#include "json/json_text.hpp"

namespace attn_trace {

namespace {

// The largest trace checking `problem` computes: run's, and decode's or tiled's
// where an entry (or the golden trace) carries t or tile; grad's is about twice run's.
double check_trace_bytes(const Problem& p, const CheckOptions& options, const std::string& golden_command) {
    bool decode = golden_command == "decode", tiled = golden_command == "tiled";
    if (golden_command == "grad" || (!p.expect.empty() && pipeline_for(p.expect) == "grad")) return 2 * full_trace_bytes(p);
    for (const auto& e : p.expect) {
        decode |= e.t.has_value();
        tiled |= e.tile.has_value();
    }
    double bytes = full_trace_bytes(p);
    if (decode) bytes = std::max(bytes, decode_trace_bytes(p));
    if (tiled) bytes = std::max(bytes, tiled_trace_bytes(p, options.tiled));
    return bytes;
}

CheckResult check_file(const std::string& file, const CheckRequest& request, const std::optional<std::string>& text = std::nullopt) {
    const Problem problem = text ? parse_problem(*text, file, request.allow_nonfinite) : load_problem(file, request.allow_nonfinite);
    CheckOptions options = request.options;
    options.run.dtype = options.overrides.dtype ? parse_dtype(*options.overrides.dtype, "⟦dtype⟧") : problem.dtype.value_or(Dtype::f64);
    std::optional<Trace> golden;
    if (!request.golden.empty()) golden = load_golden_trace(request.golden);
    refuse_over_budget(problem, "check", check_trace_bytes(problem, options, golden ? golden->command : ""), request.budget);
    return golden ? check_golden(problem, *golden, options) : check_expectations(problem, options);
}

// The problems of a file that holds a JSON list of them, each as its own text; nullopt for
// any other file (a problem, or one that does not read: check_file says what is wrong).
std::optional<std::vector<std::string>> problems_in_sheet(const std::string& file) {
    if (file == "-") return std::nullopt;
    std::string text;
    try {
        text = read_text_file(file, "the problem file");
    } catch (const Error&) {
        return std::nullopt;
    }
    const std::size_t first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos || text[first] != '[') return std::nullopt;
    nlohmann::json list;
    try {
        list = parse_json_text(text, file);
    } catch (const Error&) {
        return std::nullopt;
    }
    if (!list.is_array() || list.empty() || !std::all_of(list.begin(), list.end(), [](const nlohmann::json& p) { return p.is_object(); })) return std::nullopt;
    std::vector<std::string> problems;
    for (const auto& problem : list) problems.push_back(problem.dump());
    return problems;
}

std::string failure_text(const StepCheck& step) {
    if (!step.found) return fmt::format("  {}: no such step in the computed trace\n", step.label);
    const auto& c = step.comparison;
    if (!c.shape_matches)
        return fmt::format("  {}: expected shape {}, got {}\n", step.label, shape_string(step.expected_rows, step.expected_cols),
                           shape_string(step.got_rows, step.got_cols));
    std::string text = fmt::format("  {}: {} of {} values differ (max error {:.3g} at [{}, {}]: expected {:.10g}, got {:.10g}; tolerance atol {:g} + "
                                   "rtol {:g}·|expected|)\n",
                                   step.label, c.failed, c.compared, c.max_error, c.worst_row, c.worst_col, c.worst_want, c.worst_got,
                                   step.tolerance.atol, step.tolerance.rtol);
    for (const auto& m : c.first_mismatches)
        text += fmt::format("    [{}, {}] expected {:.10g}, got {:.10g}, difference {:.3g}\n", m.row, m.col, m.want, m.got, m.got - m.want);
    return text;
}

}  // namespace

std::size_t CheckReport::passed() const {
    return static_cast<std::size_t>(std::count_if(files.begin(), files.end(), [](const CheckedFile& f) { return f.result && f.result->passed(); }));
}

std::size_t CheckReport::failed() const { return files.size() - passed(); }

int CheckReport::exit_code() const {
    if (std::any_of(files.begin(), files.end(), [](const CheckedFile& f) { return !f.result; })) return 2;
    return failed() > 0 ? 1 : 0;
}

CheckReport check_command(const CheckRequest& request, const std::function<void(const CheckedFile&)>& each) {
    if (!request.golden.empty() && request.files.size() != 1) throw InputError("⟦golden⟧ compares one problem file with one trace");
    const ProblemOverrides& overrides = request.options.overrides;
    if (request.golden.empty() && (overrides.mask || overrides.scale || overrides.empty_rows))
        throw InputError("⟦mask⟧, ⟦scale⟧ and ⟦empty_rows⟧ replace a golden trace's settings: give them with ⟦golden⟧ (an expect file's own settings are "
                         "its problem's)");
    CheckReport report;
    auto check_one = [&](const std::string& name, const std::optional<std::string>& text) {
        CheckedFile checked{name, std::nullopt, "", 0.0};
        const auto started = std::chrono::steady_clock::now();
        try {
            checked.result = check_file(name, request, text);
        } catch (const BackendUnavailable&) {
            throw;  // the same for every file: stop with exit 3
        } catch (const Error& error) {
            checked.error = error.marked();
        }
        checked.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        if (each) each(checked);
        report.files.push_back(std::move(checked));
    };
    for (const auto& file : request.files) {
        // A sheet (exercise's JSON of several exercises: a list of problems) is one test a
        // problem, FILE[k]; its paths resolve from FILE's folder (docs/COMMANDS.md#check).
        const auto sheet = request.golden.empty() ? problems_in_sheet(file) : std::nullopt;
        if (!sheet) {
            check_one(file, std::nullopt);
            continue;
        }
        for (std::size_t k = 0; k < sheet->size(); ++k) check_one(fmt::format("{}[{}]", file, k), (*sheet)[k]);
    }
    return report;
}

std::string render_checked_file(const CheckedFile& checked) {
    if (!checked.result) return fmt::format("ERROR {}\n", checked.file);
    const CheckResult& result = *checked.result;
    std::string text;
    for (const auto& note : result.notes) text += "note: " + cli_words(note) + "\n";
    if (!result.passed()) {
        text += fmt::format("FAIL {} ({})\n", checked.file, result.command);
        for (const auto& s : result.steps)
            if (!s.passed()) text += failure_text(s);
        return text;
    }
    std::size_t values = 0;
    double max_error = 0;
    for (const auto& s : result.steps) {
        values += s.comparison.compared;
        max_error = std::max(max_error, s.comparison.max_error);
    }
    return text + fmt::format("PASS {} ({} {} step{}, {} values, max error {:.2g})\n", checked.file, result.command, result.steps.size(),
                              result.steps.size() == 1 ? "" : "s", values, max_error);
}

std::string render_check_closing(const CheckReport& report) { return fmt::format("{} passed, {} failed\n", report.passed(), report.failed()); }

}  // namespace attn_trace
