#include <iostream>

#include <fmt/format.h>

#include "attn_trace/check.hpp"
#include "attn_trace/errors.hpp"
#include "commands.hpp"
#include "report_error.hpp"
#include "trace_budget.hpp"

namespace attn_trace::cli {

namespace {

struct CheckCommandOptions {
    std::vector<std::string> files;
    std::string golden;
    std::optional<std::string> mask, scale, empty_rows;  // with --golden: replace its settings
    std::string dtype = "f64";
    std::string backend = "cpu";
    std::optional<double> atol, rtol;
    long long block_q = TiledOptions{}.block_q, block_k = TiledOptions{}.block_k, prefill = 0;  // for files whose steps carry tile or t
    bool allow_nonfinite = false;
    Budget budget;
};

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

void report_failure(const std::string& file, const StepCheck& step) {
    if (!step.found) {
        std::cout << fmt::format("  {}: no such step in the computed trace\n", step.label);
        return;
    }
    const auto& c = step.comparison;
    if (!c.shape_matches) {
        std::cout << fmt::format("  {}: expected shape {}, got {}\n", step.label, shape_string(step.expected_rows, step.expected_cols),
                                 shape_string(step.got_rows, step.got_cols));
        return;
    }
    std::cout << fmt::format("  {}: {} of {} values differ (max error {:.3g} at [{}, {}]: expected {:.10g}, got {:.10g}; tolerance atol {:g} + "
                             "rtol {:g}·|expected|)\n",
                             step.label, c.failed, c.compared, c.max_error, c.worst_row, c.worst_col, c.worst_want, c.worst_got,
                             step.tolerance.atol, step.tolerance.rtol);
    for (const auto& m : c.first_mismatches)
        std::cout << fmt::format("    [{}, {}] expected {:.10g}, got {:.10g}, difference {:.3g}\n", m.row, m.col, m.want, m.got,
                                 m.got - m.want);
    (void)file;
}

void add_check_command(CLI::App& app, int& exit_code) {
    static CheckCommandOptions o;
    auto* check = app.add_subcommand("check", "compare computed steps with a file's expected values; exit 1 on any failure");
    check->footer(R"(Each file is one test. An expect entry {"name": "weights", "head": 0, "data": [[...]], "atol": 1e-4}
passes when |got - want| <= atol + rtol*|want| for every value ("-inf" and "nan" match only
themselves). Entries with "t" run decode (--prefill P), with "tile" run tiled (--block-q, --block-k; 2 and 2
by default), otherwise run. Gradient names (grad_…, jacobian, lse, delta, p) run grad with the problem's
d_out: a jacobian entry carries "row" (grad --row), and lse, delta or tiles of the backward run
grad --tiled at --block-q, --block-k. A golden trace of grad must have been made with the problem's d_out.
--golden TRACE recomputes with the settings the trace recorded (mask, scale, empty_rows, dropout,
dtype) and says so; --mask, --scale, --empty-rows and --dtype replace them, each named on a line.
The last line is "N passed, N failed". Exit 0 all passed, 1 a check failed, 2 a file is bad input.

Examples:
  attn-trace check examples/*.json
  attn-trace check tests/golden/*.json --dtype f32 --atol 1e-5
  attn-trace run problem.json --format json > golden.json
  attn-trace check problem.json --golden golden.json
  attn-trace check problem.json --golden golden.json --mask none)");
    check->add_option("FILE", o.files, "problem files with expect entries")->required();
    check->add_option("--golden", o.golden, "compare with a trace written by `run --format json` (one FILE)");
    check->add_option("--mask", o.mask, "with --golden: the mask to recompute with instead of the golden's");
    check->add_option("--scale", o.scale, "with --golden: the scale instead of the golden's (auto, none or a number)");
    check->add_option("--empty-rows", o.empty_rows, "with --golden: error, zero or nan instead of the golden's");
    check->add_option("--dtype", o.dtype, "f64, f32, f16 or bf16 (default: each file's \"dtype\", else f64)")->check(CLI::IsMember({"f64", "f32", "f16", "bf16"}));
    check->add_option("--backend", o.backend, "cpu or cuda")->capture_default_str();
    check->add_option("--atol", o.atol, "absolute tolerance for every entry, overriding the files")->check(CLI::NonNegativeNumber);
    check->add_option("--rtol", o.rtol, "relative tolerance for every entry, overriding the files")->check(CLI::NonNegativeNumber);
    check->add_option("--block-q", o.block_q, "for files with tile steps: query rows per block")->capture_default_str();
    check->add_option("--block-k", o.block_k, "for files with tile steps: keys per tile")->capture_default_str();
    check->add_option("--prefill", o.prefill, "decode files: the first P queries as one block")->capture_default_str();
    check->add_flag("--allow-nonfinite", o.allow_nonfinite, "accept NaN or infinities in input matrices, as \"allow_nonfinite\": true does");
    add_memory_option(*check, o.budget);
    check->callback([&exit_code, check] {
        if (!o.golden.empty() && o.files.size() != 1) throw InputError("--golden compares one problem file with one trace");
        if (o.golden.empty() && (o.mask || o.scale || o.empty_rows))
            throw InputError("--mask, --scale and --empty-rows replace a golden trace's settings: give them with --golden (an expect file's own settings are its problem's)");
        CheckOptions options;
        options.run = {Dtype::f64, o.backend};
        options.atol = o.atol;
        options.rtol = o.rtol;
        options.tiled = {whole_number_option("--block-q", o.block_q, 1), whole_number_option("--block-k", o.block_k, 1)};
        options.decode.prefill = whole_number_option("--prefill", o.prefill, 0);
        options.overrides = {o.mask, o.scale, o.empty_rows, check->count("--dtype") ? std::optional<std::string>(o.dtype) : std::nullopt};
        int passed = 0, failed = 0;
        bool bad_input = false;
        for (const auto& file : o.files) {
            try {
                const Problem problem = load_problem(file, o.allow_nonfinite);
                options.run.dtype = check->count("--dtype") ? parse_dtype(o.dtype, "--dtype") : problem.dtype.value_or(Dtype::f64);
                std::optional<Trace> golden;
                if (!o.golden.empty()) golden = load_golden_trace(o.golden);
                refuse_over_budget(problem, "check", check_trace_bytes(problem, options, golden ? golden->command : ""), o.budget);
                const CheckResult result = golden ? check_golden(problem, *golden, options) : check_expectations(problem, options);
                std::size_t values = 0;
                double max_error = 0;
                for (const auto& s : result.steps) {
                    values += s.comparison.compared;
                    max_error = std::max(max_error, s.comparison.max_error);
                }
                for (const auto& note : result.notes) std::cout << "note: " << word_options(note, flag_of) << "\n";
                if (result.passed()) {
                    ++passed;
                    std::cout << fmt::format("PASS {} ({} {} step{}, {} values, max error {:.2g})\n", file, result.command, result.steps.size(),
                                             result.steps.size() == 1 ? "" : "s", values, max_error);
                } else {
                    ++failed;
                    std::cout << fmt::format("FAIL {} ({})\n", file, result.command);
                    for (const auto& s : result.steps)
                        if (!s.passed()) report_failure(file, s);
                }
            } catch (const BackendUnavailable&) {
                throw;  // the same for every file: stop with exit 3
            } catch (const Error& error) {
                ++failed;
                bad_input = true;
                std::cout << fmt::format("ERROR {}\n", file);
                report_error(std::current_exception(), std::cerr);
            }
        }
        std::cout << fmt::format("{} passed, {} failed\n", passed, failed);
        exit_code = bad_input ? 2 : failed > 0 ? 1 : 0;
    });
}

const CommandRegistration registration{50, add_check_command};

}  // namespace

}  // namespace attn_trace::cli
