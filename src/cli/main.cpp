// attn-trace: one try, one catch. Every error is typed and carries its exit code.
#include <iostream>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <CLI/CLI.hpp>

#include "attn_trace/errors.hpp"
#include "commands.hpp"
#include "report_error.hpp"
#include "usage_error.hpp"
#include "version_text.hpp"

// The CLI's allocation policy: blocks under 4 MiB come from the heap, and freed heap
// memory is kept (up to 256 MiB) for the next allocation instead of going back to the
// kernel. With glibc's defaults the fast path's packed K and V went back to the kernel
// after every call and were faulted in again on the next: 14 % of `bench --n 1024`
// (docs/PERFORMANCE.md). Larger blocks are still mapped and unmapped on their own: a
// 32 MiB threshold let n = 65536's freed input buffers linger and raised `run`'s peak
// RSS from 171 to 220 MB; at 4 MiB it stays at 171 MB.
namespace {
void keep_freed_memory() {
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}
}  // namespace

int main(int argc, char** argv) {
    keep_freed_memory();
    CLI::App app{"attn-trace: see transformer attention computed, step by step, every matrix and shape exact."};
    app.set_version_flag("--version", attn_trace::cli::version_text);
    app.require_subcommand(1);
    app.footer(R"(Examples:
  attn-trace run examples/damaged_on_arrival.json --mask causal
  attn-trace check examples/*.json
  attn-trace random --n 4 --dk 2 --seed 7 -o problem.json

Exit codes: 0 success, 1 a check failed, 2 bad input or usage, 3 backend unavailable,
4 an internal error (a bug: please report it).
Run `attn-trace COMMAND --help` for each command's options and examples.)");
    int exit_code = 0;
    for (const auto& command : attn_trace::cli::registered_commands()) command.add(app, exit_code);
    attn_trace::cli::refuse_negative_counts(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::Success& success) {
        return app.exit(success);  // --help, --version
    } catch (const CLI::ParseError& error) {
        std::cerr << attn_trace::cli::usage_error_text(error, app) << "\n";
        return 2;  // usage errors share the bad-input exit code (docs/COMMANDS.md#exit-codes)
    } catch (...) {
        return attn_trace::cli::report_error(std::current_exception(), std::cerr);
    }
    return exit_code;
}
