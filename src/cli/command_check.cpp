#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "attn_trace/check_command.hpp"
#include "attn_trace/cli_words.hpp"
#include "attn_trace/errors.hpp"
#include "budget_options.hpp"
#include "commands.hpp"

namespace attn_trace::cli {

namespace {

struct CheckCommandOptions {
    std::vector<std::string> files;
    std::string golden;
    std::optional<std::string> mask, scale, empty_rows;  // with --golden: replace its settings
    std::string dtype = "f64";
    std::string backend = "cpu";
    std::optional<double> atol, rtol;
    std::optional<int> decimals;
    std::string format = "text";
    std::string junit;  // a JUnit file beside the console's text
    long long block_q = TiledOptions{}.block_q, block_k = TiledOptions{}.block_k, prefill = 0;  // for files whose steps carry tile or t
    bool allow_nonfinite = false;
    Budget budget;
};

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
--decimals N: entries without an "atol" or "rtol" of their own pass within half a unit of the Nth
decimal (answers written to N decimals); --atol and --rtol still replace every entry's tolerance.
--format json, junit or github writes the report for CI instead of the text (the same counts and
exit code); --junit FILE writes JUnit XML to FILE beside the text on the console.

Examples:
  attn-trace check examples/*.json
  attn-trace check tests/golden/*.json --dtype f32 --atol 1e-5
  attn-trace run problem.json --format json > golden.json
  attn-trace check problem.json --golden golden.json
  attn-trace check problem.json --golden golden.json --mask none
  attn-trace check examples/*.json --format junit > check.xml
  attn-trace check examples/*.json --junit check.xml
  attn-trace check answers.json --decimals 2)");
    check->add_option("FILE", o.files, "problem files with expect entries")->required();
    check->add_option("--golden", o.golden, "compare with a trace written by `run --format json` (one FILE)");
    check->add_option("--mask", o.mask, "with --golden: the mask to recompute with instead of the golden's");
    check->add_option("--scale", o.scale, "with --golden: the scale instead of the golden's (auto, none or a number)");
    check->add_option("--empty-rows", o.empty_rows, "with --golden: error, zero or nan instead of the golden's");
    check->add_option("--dtype", o.dtype, "f64, f32, f16 or bf16 (default: each file's \"dtype\", else f64)")->check(CLI::IsMember({"f64", "f32", "f16", "bf16"}));
    check->add_option("--backend", o.backend, "cpu or cuda")->capture_default_str();
    check->add_option("--atol", o.atol, "absolute tolerance for every entry, overriding the files")->check(CLI::NonNegativeNumber);
    check->add_option("--rtol", o.rtol, "relative tolerance for every entry, overriding the files")->check(CLI::NonNegativeNumber);
    check->add_option("--decimals", o.decimals, "answers written to N decimals: atol half a unit of the Nth decimal for entries without their own")
        ->check(CLI::Range(0, 15));
    check->add_option("--format", o.format, "text (default), json, junit (JUnit XML) or github (GitHub Actions' ::error lines)")
        ->check(CLI::IsMember({"text", "json", "junit", "github"}));
    check->add_option("--junit", o.junit, "also write the report as JUnit XML to FILE (the console keeps the text)");
    check->add_option("--block-q", o.block_q, "for files with tile steps: query rows per block")->capture_default_str();
    check->add_option("--block-k", o.block_k, "for files with tile steps: keys per tile")->capture_default_str();
    check->add_option("--prefill", o.prefill, "decode files: the first P queries as one block")->capture_default_str();
    check->add_flag("--allow-nonfinite", o.allow_nonfinite, "accept NaN or infinities in input matrices, as \"allow_nonfinite\": true does");
    add_memory_option(*check, o.budget);
    check->callback([&exit_code, check] {
        CheckRequest request;
        request.files = o.files;
        request.golden = o.golden;
        CheckOptions& options = request.options;
        options.overrides = {o.mask, o.scale, o.empty_rows, check->count("--dtype") ? std::optional<std::string>(o.dtype) : std::nullopt, std::nullopt};
        options.atol = o.atol;
        options.rtol = o.rtol;
        options.decimals = o.decimals;
        options.tiled = {whole_number_option("--block-q", o.block_q, 1), whole_number_option("--block-k", o.block_k, 1)};
        options.decode.prefill = whole_number_option("--prefill", o.prefill, 0);
        options.run.backend = o.backend;
        request.allow_nonfinite = o.allow_nonfinite;
        request.budget = o.budget;
        // The text: each file's lines as soon as it is checked, a bad file's error on standard
        // error. The other formats are one document, written when every file is checked.
        const bool text = o.format == "text";
        const CheckReport report = check_command(request, [text](const CheckedFile& checked) {
            if (!text) return;
            std::cout << render_checked_file(checked) << std::flush;
            if (!checked.result) std::cerr << "attn-trace: error: " << cli_words(checked.error) << "\n";
        });
        std::cout << (text ? render_check_closing(report) : o.format == "json" ? render_check_json(report)
                                                          : o.format == "junit" ? render_check_junit(report)
                                                                                : render_check_github(report));
        if (!o.junit.empty()) {
            std::ofstream out(o.junit, std::ios::binary);
            out << render_check_junit(report);
            if (!out) throw InputError(fmt::format("--junit {}: cannot write the file (does its folder exist?)", o.junit));
        }
        exit_code = report.exit_code();
    });
}

const CommandRegistration registration{50, add_check_command};

}  // namespace

}  // namespace attn_trace::cli
