// `bench` (docs/COMMANDS.md#bench): the attention implementations timed side by side.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

#include "attn_trace/bench.hpp"
#include "attn_trace/errors.hpp"
#include "bench_report.hpp"
#include "commands.hpp"
#include "budget_options.hpp"

namespace attn_trace::cli {

namespace {

struct BenchOptions {
    BenchConfig config;
    std::string dtype = "f32";
    Format format = Format::text;
    std::string svg, roofline;
    bool decode = false;
    std::vector<std::size_t> cache{4096};
    Budget budget;
};

// "\r[2/3] n = 8192  fast  run 4/6" on standard error, only when it is a terminal.
BenchProgress progress_line() {
    if (!isatty(fileno(stderr))) return nullptr;
    return [](std::size_t setting, std::size_t settings, const std::string& impl, int run, int runs) {
        std::cerr << fmt::format("\r[{}/{}] {:<6} run {}/{}   ", setting + 1, settings, impl, run, runs) << std::flush;
    };
}

void add_bench_command(CLI::App& app, int& exit_code) {
    static BenchOptions o;
    o.config.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    auto* bench = app.add_subcommand("bench", "time the attention implementations side by side (naive, fast, cuda)");
    bench->footer(R"(Implementations (all on the same random inputs, those of `attn-trace random --seed S`):
  naive  the cpu backend's unfused attention: the whole (n, n) score matrix (one row
         block per thread, OpenBLAS), full-row softmax, then P V; skipped when one
         score matrix would pass 2 GiB
  fast   the cpu backend's fused attention: the tiled kernel with online softmax
         (what `run --fast` uses)
  cuda   the cuda backend's fused attention (f32): unavailable without CUDA or a GPU
--cache T adds decode settings after the --n ones: one decode step, one query per
query head over a KV cache of T tokens, query heads sharing KV heads (--kv-heads,
GQA); fast is then the cpu backend's decode kernel (flash-decoding), naive the
unfused baseline with n = 1; their table shows the bytes of cache read per second
beside the copy bandwidth. --decode runs decode settings only (fast by default).
--grad times the backward instead of the forward at each --n: fast is the cpu
backend's fused backward (what `grad --fast` runs: FlashAttention-2's, its forward
included), credited with 14·n·m·d_k per head (4 forward, 10 backward; half when
causal) and judged by grad_q on the reference rows; cuda has no backward yet.
Each setting prints the median of the repeats after the warm-up runs with min–max,
GFLOP/s counting 4·n·m·d_k per head (half when causal), the bytes of scores held at
once, and the largest difference from the CPU reference pipeline (the plain-loop
`run` computation) on 24 query rows: the first, middle and last 8 (decode: the one
query row). First it measures the two roofs on --threads threads: the multiply-add
peak of the kernel's vectors and the copy bandwidth of a 256 MiB buffer; each setting
then shows its FLOPs per byte, its bound min(peak, FLOP/B × bandwidth), which roof that
is, and the share of the bound it reached (docs/PERFORMANCE.md#the-roofline).
Before that, each setting's memory is estimated (its inputs, the kernel's buffers,
two results, the reference rows): a run with one past --max-memory is refused
(exit 2) with the figures, before anything is measured.

Examples:
  attn-trace bench --n 128,1024,8192 --dk 64 --heads 1 --threads 2
  attn-trace bench --n 1024,4096,16384 --causal --impl naive,fast --repeats 5 --svg time.svg
  attn-trace bench --n 65536 --impl fast --repeats 1 --warmup 0 --format json
  attn-trace bench --n 1024,8192 --dtype f64 --format csv > f64.csv
  attn-trace bench --decode --cache 4096,32768 --heads 32 --kv-heads 8 --dk 128 --threads 2
  attn-trace bench --grad --n 1024,4096 --impl fast --threads 2
  attn-trace bench --n 1024,2048 --cache 4096,32768 --heads 32 --kv-heads 8 --dk 128 --impl fast --roofline roofline.svg
  attn-trace bench --decode --cache 262144 --heads 32 --kv-heads 8 --dk 128 --max-memory 12G)");
    auto* lengths = bench->add_option("--n", o.config.lengths, "sequence lengths n (= m), comma-separated")
        ->delimiter(',')
        ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20))
        ->capture_default_str();
    auto* decode = bench->add_flag("--decode", o.decode,
                                   "decode steps only: one query per head over a KV cache of --cache tokens, fast = the decode kernel");
    bench->add_option("--cache", o.cache, "decode steps over caches of these lengths T, comma-separated (after the --n settings; none by default, 4096 with --decode)")
        ->delimiter(',')
        ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24));
    lengths->excludes(decode);
    bench->add_flag("--grad", o.config.backward, "time the fused backward (forward included) at each --n instead of the forward; fast by default")
        ->excludes(decode)
        ->excludes("--cache");
    bench->add_option("--kv-heads", o.config.kv_heads, "KV heads (GQA: --heads must be a multiple; default: --heads)")->check(CLI::Range(1, 1024));
    bench->add_option("--dk", o.config.d_k, "width per head (d_k = d_v)")->check(CLI::Range(1, 4096))->capture_default_str();
    bench->add_option("--heads", o.config.heads, "heads")->check(CLI::Range(1, 1024))->capture_default_str();
    bench->add_flag("--causal", o.config.causal, "causal mask (tiles above the diagonal are skipped)");
    bench->add_option("--threads", o.config.threads, "worker threads (default: one per core)")->check(CLI::Range(1, 1024))->capture_default_str();
    bench->add_option("--impl", o.config.impls, "implementations, comma-separated: naive, fast, cuda")
        ->delimiter(',')
        ->check(CLI::IsMember({"naive", "fast", "cuda"}))
        ->capture_default_str();
    bench->add_option("--repeats", o.config.repeats, "timed runs per setting")->check(CLI::Range(1, 1000))->capture_default_str();
    bench->add_option("--warmup", o.config.warmup, "untimed runs first")->check(CLI::Range(0, 1000))->capture_default_str();
    bench->add_option("--dtype", o.dtype, "f32 or f64")->check(CLI::IsMember({"f32", "f64"}))->capture_default_str();
    bench->add_option("--seed", o.config.seed, "seed of Q; K and V use seed+1, seed+2")->capture_default_str();
    bench->add_option("--block-q", o.config.block_q, "fast: query rows per block Br (default 256; smaller for short sequences; --grad: 64)");
    bench->add_option("--block-k", o.config.block_k, "fast: keys per tile Bc (default 256; --grad: 64)");
    add_format_option(*bench, o.format, formats_of(for_bench), "text, json or csv");
    add_memory_option(*bench, o.budget, "a run with a setting whose estimate (inputs, kernel buffers, results, reference rows)");
    bench->add_option("--svg", o.svg, "also draw time vs n (log-log, with an n² line; decode steps alone: vs T, with a T line) to this file");
    bench->add_option("--roofline", o.roofline, "also draw the roofline (GFLOP/s vs FLOP per byte, log-log, both roofs and every setting) to this file");
    bench->add_option("--dump", o.config.dump_dir,
                      "write each n's inputs and outputs to this directory as raw little-endian arrays (nN_q.bin, nN_out_fast.bin, ...) "
                      "for bench/compare_torch.py");
    bench->callback([&exit_code, bench] {
        o.config.dtype = parse_dtype(o.dtype, "--dtype");
        o.config.memory_budget_bytes = static_cast<double>(o.budget.memory);
        if (bench->count("--cache")) o.config.cache_lengths = o.cache;
        if (o.config.backward && bench->count("--impl") == 0) o.config.impls = {"fast"};
        if (o.decode) {  // decode settings only: the default cache and the decode kernel alone
            o.config.lengths.clear();
            o.config.cache_lengths = o.cache;
            if (bench->count("--impl") == 0) o.config.impls = {"fast"};
        }
        const BenchProgress progress = progress_line();
        const BenchRun run = run_bench(o.config, progress);
        if (progress) std::cerr << "\r\x1b[K" << std::flush;
        if (o.format == Format::json) std::cout << bench_json(o.config, run);
        else if (o.format == Format::csv) std::cout << bench_csv(o.config, run);
        else std::cout << bench_text(o.config, run);
        auto write_chart = [](const std::string& path, const char* flag, const std::string& svg) {
            std::ofstream out(path);
            if (!out || !(out << svg)) throw InputError(fmt::format("{} {}: cannot write the chart", flag, path));
        };
        if (!o.svg.empty()) write_chart(o.svg, "--svg", bench_svg(o.config, run));
        if (!o.roofline.empty()) write_chart(o.roofline, "--roofline", bench_roofline_svg(o.config, run));
        exit_code = 0;
    });
}

const CommandRegistration registration{70, add_bench_command};

}  // namespace

}  // namespace attn_trace::cli
