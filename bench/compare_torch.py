#!/usr/bin/env python3
"""attn-trace's fast path against PyTorch on identical inputs, with the same threads.

Runs `attn-trace bench --dump DIR` (which writes each n's Q, K, V and outputs as
raw float32, or float64 with --dtype f64), loads those very inputs into PyTorch, times
F.scaled_dot_product_attention and the readable matmul-softmax-matmul path,
checks that every output agrees with attn-trace's, and prints the time ratio per
n, next to the machine's sgemm rate (numpy's matmul) and the two roofs attn-trace's
bench measures in the same run (its multiply-add peak and copy bandwidth, read from its
JSON: docs/PERFORMANCE.md#the-roofline).

With --decode it compares one decode step instead: `attn-trace bench --decode` (one query
per query head over a KV cache of T tokens, GQA) against F.scaled_dot_product_attention
with one query and enable_gqa=True, in bytes of KV cache read per second beside the
copy bandwidth. With --grad it compares the backward: `attn-trace bench --grad` (the
fused backward, its forward included) against SDPA's forward and backward through
autograd, every gradient checked against attn-trace's. Each comparison is one
function in COMPARISONS. With --python it compares the Python package's
attn_trace.scaled_dot_product_attention with F.scaled_dot_product_attention on the same
torch tensors (import attn_trace: pip install ., or PYTHONPATH=build/python).

The machine is shared and noisy, so the whole comparison runs --rounds times
(default 3), attn-trace and PyTorch back to back for each n: a burst of noise
then slows one round of both instead of one side. The table gives the median
over the rounds, and SDPA / fast as the median of the rounds' own ratios with
their range.

    python3 bench/compare_torch.py --n 1024,4096,8192 --threads 2
    python3 bench/compare_torch.py --n 1024,8192,16384 --causal --repeats 7
    python3 bench/compare_torch.py --decode --cache 4096,32768 --heads 32 --kv-heads 8 --dk 128 --threads 2
    python3 bench/compare_torch.py --grad --n 1024,4096 --threads 2 --rounds 3
    PYTHONPATH=build/python python3 bench/compare_torch.py --python --n 4096 --threads 2

Thread counts are fixed for everyone before anything loads: OMP_NUM_THREADS,
OPENBLAS_NUM_THREADS and MKL_NUM_THREADS, torch.set_num_threads, and
OMP_WAIT_POLICY=PASSIVE (on this 2-core VM, spinning OpenMP workers make
2-thread timings swing by 40x).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", default="1024,4096,8192", help="sequence lengths, comma-separated")
    parser.add_argument("--dk", type=int, default=64)
    parser.add_argument("--heads", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--dtype", choices=["f32", "f64"], default="f32",
                        help="f64: attn-trace's --dtype f64 against PyTorch's float64 SDPA, the roofline numpy's float64 matmul and "
                             "the peak half the float multiply-add rate (the same instructions on half as many lanes)")
    parser.add_argument("--repeats", type=int, default=5,
                        help="timed runs per setting at n >= 4096; shorter sequences get more, (4096/n)^2 times as many, so that "
                             "every median spans about the same time (a 3 ms run is at the mercy of the machine's noise)")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3, help="times the whole comparison is repeated, attn-trace and PyTorch back to back per n")
    parser.add_argument("--attn-trace", default=None, help="the binary (default: build/attn-trace, then build-*/attn-trace, then PATH)")
    parser.add_argument("--grad", action="store_true", help="compare the backward (forward included): bench --grad against SDPA + autograd")
    parser.add_argument("--python", action="store_true",
                        help="compare the package's attn_trace.scaled_dot_product_attention with F.scaled_dot_product_attention")
    parser.add_argument("--decode", action="store_true", help="compare one decode step (one query per head over a KV cache) instead")
    parser.add_argument("--cache", default="4096,32768", help="--decode: KV cache lengths T, comma-separated")
    parser.add_argument("--kv-heads", type=int, default=None, help="--decode: KV heads (default: --heads)")
    parser.add_argument("--readable-limit-gib", type=float, default=2.0, help="skip the readable path when its (n, n) scores pass this")
    return parser.parse_args()


def find_binary(given):
    if given:
        return given
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for candidate in [os.path.join(root, "build", "attn-trace")] + sorted(
            os.path.join(root, d, "attn-trace") for d in os.listdir(root) if d.startswith("build-")):
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("attn-trace")
    if not found:
        sys.exit("compare_torch.py: cannot find attn-trace; build it or pass --attn-trace")
    return found


def fix_threads(threads):
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(threads)
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"


def sgemm_gflops(threads, dtype="float32", size=4096, repeats=5):
    """numpy's matmul rate (float32: sgemm, float64: dgemm) in a fresh process, with
    OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset there (some machines set them, and they slow numpy)."""
    code = (
        "import numpy as np, time\n"
        f"a = np.random.default_rng(0).standard_normal(({size}, {size}), dtype=np.{dtype}); b = a.copy(); a @ b\n"
        "ts = []\n"
        f"for _ in range({repeats}):\n"
        "    t = time.perf_counter(); a @ b; ts.append(time.perf_counter() - t)\n"
        f"print(2 * {size}**3 / sorted(ts)[len(ts) // 2] / 1e9)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    return float(subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True).stdout)


def run_bench(binary, arguments):
    """One `attn-trace bench ... --format json` run: its whole report."""
    command = [binary, "bench"] + arguments + ["--format", "json"]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"compare_torch.py: {' '.join(command)} failed (exit {run.returncode}):\n{run.stderr}")
    return json.loads(run.stdout)


class BenchRuns:
    """Every `attn-trace bench` run of one comparison, and what each reports besides its
    timings: the CPU kernel target and both roofs (their medians are printed)."""

    def __init__(self, binary):
        self.binary, self.kernels, self.peaks, self.bandwidths = binary, set(), [], []

    def run(self, command, dump=None):
        """One run: its results, {impl: result}."""
        report = run_bench(self.binary, command + (["--dump", dump] if dump else []))
        self.kernels.add(report.get("kernel", "?"))
        self.peaks.append(report["roofs"]["fma_gflops"])
        self.bandwidths.append(report["roofs"]["copy_gb_per_s"])
        return {r["impl"]: r for r in report["results"]}

    def peak(self):
        return statistics.median(self.peaks)

    def bandwidth(self):
        return statistics.median(self.bandwidths)


def timed(function, repeats, warmup):
    for _ in range(warmup):
        result = function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), min(times), max(times), result


def compare_forward(args, binary, np, torch, F):
    """Self-attention of n queries: bench's naive and fast against SDPA and the readable path."""
    lengths = [int(x) for x in args.n.split(",")]

    def repeats_for(n):
        return max(args.repeats, min(1000, -(-args.repeats * 4096**2 // n**2)))  # bench takes at most 1000

    def bench(n, impls, dump=None):
        """One `attn-trace bench` run for one n: {impl: result}."""
        command = ["--n", str(n), "--dk", str(args.dk), "--heads", str(args.heads), "--threads", str(args.threads),
                   "--impl", impls, "--repeats", str(repeats_for(n)), "--warmup", str(args.warmup), "--dtype", args.dtype]
        return runs.run(command + (["--causal"] if args.causal else []), dump)

    runs = BenchRuns(binary)
    fast_ms = {n: [] for n in lengths}
    sdpa_ms = {n: [] for n in lengths}
    flops = {}  # n -> the work of one run, as bench counts it (its GFLOP/s times its time)
    first = {}  # n -> the first round's naive result, readable time and largest difference
    rooflines = []
    failures = 0
    element = np.float32 if args.dtype == "f32" else np.float64  # what bench computes in and dumps
    agree = 1e-4 if args.dtype == "f32" else 1e-10
    with tempfile.TemporaryDirectory() as dump, torch.inference_mode():
        inputs = {}
        for round_index in range(args.rounds):
            rooflines.append(sgemm_gflops(args.threads, "float32" if args.dtype == "f32" else "float64"))
            for n in lengths:
                print(f"round {round_index + 1}/{args.rounds}, n = {n} ...", file=sys.stderr, flush=True)
                # attn-trace and PyTorch back to back, so a burst of noise on this shared
                # machine falls on one round of both rather than on one side only.
                ours = bench(n, "naive,fast" if round_index == 0 else "fast", dump if round_index == 0 else None)
                if n not in inputs:
                    shape = (n, args.heads, args.dk)
                    q, k, v = (torch.from_numpy(np.fromfile(f"{dump}/n{n}_{name}.bin", dtype=element).reshape(shape)).transpose(0, 1).contiguous()
                               for name in "qkv")  # (H, n, d)
                    inputs[n] = (q, k, v)
                q, k, v = inputs[n]
                sdpa, _, _, sdpa_out = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=args.causal), repeats_for(n), args.warmup)
                fast_ms[n].append(ours["fast"]["median_ms"])
                flops[n] = ours["fast"]["gflops"] * ours["fast"]["median_ms"] * 1e6
                sdpa_ms[n].append(sdpa)
                if round_index:
                    continue
                # The first round also checks the outputs and times the readable path.
                fast_out = np.fromfile(f"{dump}/n{n}_out_fast.bin", dtype=element).reshape(n, args.heads, args.dk).transpose(1, 0, 2)
                readable_ms, diffs = None, [float(np.abs(sdpa_out.numpy() - fast_out).max())]
                if n * n * 4 * args.heads <= args.readable_limit_gib * 2**30:
                    def readable():
                        scores = (q @ k.transpose(-2, -1)) / args.dk ** 0.5
                        if args.causal:
                            scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
                        return torch.softmax(scores, dim=-1) @ v
                    readable_ms, _, _, readable_out = timed(readable, repeats_for(n), args.warmup)
                    diffs.append(float(np.abs(readable_out.numpy() - fast_out).max()))
                first[n] = (ours["naive"], readable_ms, max(diffs))
                failures += not max(diffs) <= agree  # NaN counts as a failure

    roofline = statistics.median(rooflines)
    print(f"$ {binary} bench --n N --dk {args.dk} --heads {args.heads} --threads {args.threads} --impl naive,fast --repeats R "
          f"--warmup {args.warmup} --format json --dtype {args.dtype}{' --causal' if args.causal else ''} [--dump DIR]")
    print(f"torch {torch.__version__}, numpy {np.__version__}, {args.threads} threads, d_k = {args.dk}, heads = {args.heads}, "
          f"{'causal' if args.causal else 'no mask'}, {'float32' if args.dtype == 'f32' else 'float64'}; "
          f"{'sgemm' if args.dtype == 'f32' else 'dgemm'} (numpy 4096^3) {roofline:.1f} GFLOP/s "
          f"(median of {args.rounds}: {', '.join(f'{r:.0f}' for r in rooflines)})")
    peak = runs.peak()
    print(f"multiply-add peak (attn-trace bench's roof, {args.threads} threads{', halved for float64' if args.dtype == 'f64' else ''}) "
          f"{peak:.1f} GFLOP/s (median of {len(runs.peaks)} bench runs): no attention can pass this")
    print(f"attn-trace's CPU kernel: {', '.join(sorted(runs.kernels))} (ATTN_TRACE_KERNEL={os.environ.get('ATTN_TRACE_KERNEL', '')!s})")
    print(f"repeats R per setting: {', '.join(f'{repeats_for(n)} at n = {n}' for n in lengths)}")
    print(f"{args.rounds} round(s); ms are medians over the rounds of each round's median; sdpa/fast is the median of the rounds' ratios")
    print(f"{'n':>6} {'fast ms':>9} {'naive ms':>9} {'sdpa ms':>9} {'readable':>9} {'sdpa/fast':>9} {'rounds':>11} {'fast GF/s':>9} "
          f"{'% sgemm':>8} {'% peak':>7} {'max |diff|':>10}")
    for n in lengths:
        naive, readable_ms, diff = first[n]
        ratios = [s / f for s, f in zip(sdpa_ms[n], fast_ms[n])]
        fast = statistics.median(fast_ms[n])
        gflops = flops[n] / fast / 1e6
        naive_text = f"{naive['median_ms']:9.2f}" if naive["status"] == "ok" else f"{'skipped':>9}"
        readable_text = f"{readable_ms:9.2f}" if readable_ms is not None else f"{'skipped':>9}"
        print(f"{n:>6} {fast:9.2f} {naive_text} {statistics.median(sdpa_ms[n]):9.2f} {readable_text} {statistics.median(ratios):9.2f} "
              f"{f'{min(ratios):.2f}-{max(ratios):.2f}':>11} {gflops:9.1f} {100 * gflops / roofline:7.0f}% {f'{100 * gflops / peak:.0f}%':>7} {diff:10.2e}")
    return failures, agree


def compare_decode(args, binary, np, torch, F):
    """One decode step: `bench --decode` against SDPA with one query and enable_gqa=True."""
    caches = [int(x) for x in args.cache.split(",")]
    kv_heads = args.kv_heads or args.heads
    if args.heads % kv_heads:
        sys.exit("compare_torch.py: --heads must be a multiple of --kv-heads")
    group = args.heads // kv_heads
    # enable_gqa arrived in torch 2.5; before it the cache is repeated once per query head
    # up front (outside the timing, which then reads group times the bytes).
    gqa = "enable_gqa" in (F.scaled_dot_product_attention.__doc__ or "")
    element = np.float32 if args.dtype == "f32" else np.float64
    agree = 1e-4 if args.dtype == "f32" else 1e-10
    ours_ms = {t: [] for t in caches}
    sdpa_ms = {t: [] for t in caches}
    runs, cache_bytes, diffs, inputs = BenchRuns(binary), {}, {}, {}
    with tempfile.TemporaryDirectory() as dump, torch.inference_mode():
        for round_index in range(args.rounds):
            for t in caches:
                print(f"round {round_index + 1}/{args.rounds}, T = {t} ...", file=sys.stderr, flush=True)
                command = ["--decode", "--cache", str(t), "--heads", str(args.heads), "--kv-heads", str(kv_heads), "--dk", str(args.dk),
                           "--threads", str(args.threads), "--repeats", str(args.repeats), "--warmup", str(args.warmup), "--dtype", args.dtype]
                fast = runs.run(command, dump if round_index == 0 else None)["fast"]
                ours_ms[t].append(fast["median_ms"])
                cache_bytes[t] = fast["cache_bytes"]
                if t not in inputs:
                    load = lambda name, rows, heads: torch.from_numpy(
                        np.fromfile(f"{dump}/decode{t}_{name}.bin", dtype=element).reshape(rows, heads, args.dk)).transpose(0, 1).unsqueeze(0).contiguous()
                    q, k, v = load("q", 1, args.heads), load("k", t, kv_heads), load("v", t, kv_heads)  # (1, heads, rows, d)
                    if not gqa:
                        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
                    ours_out = np.fromfile(f"{dump}/decode{t}_out_fast.bin", dtype=element).reshape(args.heads, args.dk)
                    inputs[t] = (q, k, v, ours_out)
                q, k, v, ours_out = inputs[t]
                step = (lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)) if gqa else (lambda: F.scaled_dot_product_attention(q, k, v))
                ms, _, _, out = timed(step, args.repeats, args.warmup)
                sdpa_ms[t].append(ms)
                diffs[t] = float(np.abs(out[0, :, 0, :].numpy() - ours_out).max())
    peak, bandwidth = runs.peak(), runs.bandwidth()
    print(f"$ {binary} bench --decode --cache T --heads {args.heads} --kv-heads {kv_heads} --dk {args.dk} --threads {args.threads} "
          f"--repeats {args.repeats} --warmup {args.warmup} --format json --dtype {args.dtype} [--dump DIR]")
    print(f"torch {torch.__version__} (SDPA, one query, {'enable_gqa=True' if gqa else 'cache repeated per query head: no enable_gqa'}), "
          f"numpy {np.__version__}, {args.threads} threads, {args.heads} query heads over {kv_heads} KV heads, d_k = d_v = {args.dk}, "
          f"{'float32' if args.dtype == 'f32' else 'float64'}")
    print(f"roofs (attn-trace bench, medians of {len(runs.peaks)} runs): multiply-add peak {peak:.1f} GFLOP/s, copy bandwidth {bandwidth:.1f} GB/s "
          f"(read + written)")
    print(f"attn-trace's CPU kernel: {', '.join(sorted(runs.kernels))}; {args.rounds} round(s), each side's median of {args.repeats} repeats per round; "
          f"ms are medians over the rounds; GB/s counts the KV cache read once")
    print(f"{'T':>7} {'cache MB':>9} {'fast ms':>9} {'sdpa ms':>9} {'sdpa/fast':>9} {'fast GB/s':>9} {'% copy':>7} {'sdpa GB/s':>9} {'% copy':>7} "
          f"{'max |diff|':>10}")
    failures = 0
    for t in caches:
        fast, sdpa = statistics.median(ours_ms[t]), statistics.median(sdpa_ms[t])
        fast_gbs, sdpa_gbs = cache_bytes[t] / fast / 1e6, cache_bytes[t] / sdpa / 1e6
        print(f"{t:>7} {cache_bytes[t] / 1e6:9.1f} {fast:9.3f} {sdpa:9.3f} {sdpa / fast:9.2f} {fast_gbs:9.1f} {100 * fast_gbs / bandwidth:6.0f}% "
              f"{sdpa_gbs:9.1f} {100 * sdpa_gbs / bandwidth:6.0f}% {diffs[t]:10.2e}")
        failures += not diffs[t] <= agree
    return failures, agree


def compare_backward(args, binary, np, torch, F):
    """The backward: `bench --grad` (the fused backward, its forward included) against SDPA's
    forward and its backward through autograd, on the same inputs and upstream gradient."""
    lengths = [int(x) for x in args.n.split(",")]
    element = np.float32 if args.dtype == "f32" else np.float64
    agree = 1e-3 if args.dtype == "f32" else 1e-9  # gradients sum n terms more than out does
    ours_ms = {n: [] for n in lengths}
    sdpa_ms = {n: [] for n in lengths}
    runs, flops, diffs, inputs = BenchRuns(binary), {}, {}, {}
    with tempfile.TemporaryDirectory() as dump:
        for round_index in range(args.rounds):
            for n in lengths:
                print(f"round {round_index + 1}/{args.rounds}, backward n = {n} ...", file=sys.stderr, flush=True)
                command = ["--grad", "--n", str(n), "--dk", str(args.dk), "--heads", str(args.heads), "--threads", str(args.threads),
                           "--repeats", str(args.repeats), "--warmup", str(args.warmup), "--dtype", args.dtype]
                if args.causal:
                    command.append("--causal")
                fast = runs.run(command, dump if round_index == 0 else None)["fast"]
                ours_ms[n].append(fast["median_ms"])
                flops[n] = fast["gflops"] * fast["median_ms"] * 1e6
                if n not in inputs:
                    load = lambda name: torch.from_numpy(
                        np.fromfile(f"{dump}/grad{n}_{name}.bin", dtype=element).reshape(n, args.heads, args.dk)).transpose(0, 1).contiguous()
                    q, k, v, d_out = (load(name) for name in ("q", "k", "v", "do"))  # (H, n, d)
                    ours = {name: load(f"{name}_fast") for name in ("grad_q", "grad_k", "grad_v")}
                    inputs[n] = (q.requires_grad_(), k.requires_grad_(), v.requires_grad_(), d_out, ours)
                q, k, v, d_out, ours = inputs[n]

                def forward_backward():
                    q.grad = k.grad = v.grad = None
                    F.scaled_dot_product_attention(q, k, v, is_causal=args.causal).backward(d_out)
                    return q.grad, k.grad, v.grad

                ms, _, _, grads = timed(forward_backward, args.repeats, args.warmup)
                sdpa_ms[n].append(ms)
                diffs[n] = max(float((got - ours[name]).abs().max()) for name, got in zip(("grad_q", "grad_k", "grad_v"), grads))
    peak = runs.peak()
    print(f"$ {binary} bench --grad --n N --dk {args.dk} --heads {args.heads} --threads {args.threads} --repeats {args.repeats} "
          f"--warmup {args.warmup} --format json --dtype {args.dtype}{' --causal' if args.causal else ''} [--dump DIR]")
    print(f"torch {torch.__version__} (SDPA forward + backward through autograd), {args.threads} threads, d_k = {args.dk}, heads = {args.heads}, "
          f"{'causal' if args.causal else 'no mask'}, {'float32' if args.dtype == 'f32' else 'float64'}; "
          f"roofs (attn-trace bench, medians of {len(runs.peaks)} runs): multiply-add peak {peak:.1f} GFLOP/s, copy bandwidth "
          f"{runs.bandwidth():.1f} GB/s (read + written); the backward is compute-bound (FLOP/B = 14·n·d_k / (8·d_k·4) in float32)")
    print(f"attn-trace's CPU kernel: {', '.join(sorted(runs.kernels))}; {args.rounds} round(s), each side's median of {args.repeats} repeats per round; "
          f"ms are medians over the rounds; GFLOP/s counts 14·n²·d_k per head (4 forward + 10 backward, half when causal) for both")
    print(f"{'n':>6} {'fast ms':>9} {'sdpa ms':>9} {'sdpa/fast':>9} {'rounds':>11} {'fast GF/s':>9} {'% peak':>7} {'sdpa GF/s':>9} {'max |diff|':>10}")
    failures = 0
    for n in lengths:
        ratios = [s_ / f for s_, f in zip(sdpa_ms[n], ours_ms[n])]
        fast, sdpa = statistics.median(ours_ms[n]), statistics.median(sdpa_ms[n])
        print(f"{n:>6} {fast:9.2f} {sdpa:9.2f} {statistics.median(ratios):9.2f} {f'{min(ratios):.2f}-{max(ratios):.2f}':>11} "
              f"{flops[n] / fast / 1e6:9.1f} {100 * flops[n] / fast / 1e6 / peak:6.0f}% {flops[n] / sdpa / 1e6:9.1f} {diffs[n]:10.2e}")
        failures += not diffs[n] <= agree
    return failures, agree


# One function per kind of comparison, each (args, binary, numpy, torch, F) -> (failures, tolerance).
def compare_python(args, binary, np, torch, F):
    """The package's scaled_dot_product_attention against PyTorch's, the same tensors in and out."""
    import attn_trace

    attn_trace.set_num_threads(args.threads)
    lengths = [int(x) for x in args.n.split(",")]
    dtype = torch.float32 if args.dtype == "f32" else torch.float64
    agree = 1e-4 if args.dtype == "f32" else 1e-10
    ours_ms = {n: [] for n in lengths}
    sdpa_ms = {n: [] for n in lengths}
    diffs = {}
    generator = torch.Generator().manual_seed(0)
    inputs = {n: tuple(torch.randn(1, args.heads, n, args.dk, dtype=dtype, generator=generator) for _ in "qkv") for n in lengths}
    with torch.inference_mode():
        for round_index in range(args.rounds):
            for n in lengths:
                print(f"round {round_index + 1}/{args.rounds}, n = {n} ...", file=sys.stderr, flush=True)
                q, k, v = inputs[n]
                ours, _, _, ours_out = timed(lambda: attn_trace.scaled_dot_product_attention(q, k, v, is_causal=args.causal),
                                             args.repeats, args.warmup)
                theirs, _, _, sdpa_out = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=args.causal),
                                               args.repeats, args.warmup)
                ours_ms[n].append(ours)
                sdpa_ms[n].append(theirs)
                diffs[n] = float((ours_out - sdpa_out).abs().max())
    print(f"attn_trace {attn_trace.__version__} (the package) against torch {torch.__version__}, {args.threads} threads each, "
          f"d_k = {args.dk}, heads = {args.heads}, {'causal' if args.causal else 'no mask'}, "
          f"{'float32' if args.dtype == 'f32' else 'float64'}, {args.repeats} repeats, {args.rounds} round(s)")
    print(f"{'n':>6} {'attn_trace ms':>13} {'sdpa ms':>9} {'sdpa/ours':>9} {'rounds':>11} {'max |diff|':>10}")
    failures = 0
    for n in lengths:
        ratios = [s / o for s, o in zip(sdpa_ms[n], ours_ms[n])]
        print(f"{n:>6} {statistics.median(ours_ms[n]):13.2f} {statistics.median(sdpa_ms[n]):9.2f} {statistics.median(ratios):9.2f} "
              f"{f'{min(ratios):.2f}-{max(ratios):.2f}':>11} {diffs[n]:10.2e}")
        failures += not diffs[n] <= agree
    return failures, agree


COMPARISONS = {"backward": compare_backward, "decode": compare_decode, "forward": compare_forward, "python": compare_python}


def main():
    args = parse_args()
    fix_threads(args.threads)
    try:
        import numpy as np
        import torch
        import torch.nn.functional as F
    except ImportError as missing:
        sys.exit(f"compare_torch.py: {missing.name} is missing; it needs PyTorch and numpy: pip install torch numpy")
    torch.set_num_threads(args.threads)
    if args.rounds < 1 or args.repeats < 1:
        sys.exit("compare_torch.py: --rounds and --repeats must be at least 1")
    if args.decode + args.grad + args.python > 1:
        sys.exit("compare_torch.py: --decode, --grad and --python are three comparisons: choose one")
    binary = None if args.python else find_binary(args.attn_trace)
    chosen = "decode" if args.decode else "backward" if args.grad else "python" if args.python else "forward"
    failures, agree = COMPARISONS[chosen](args, binary, np, torch, F)
    if failures:
        sys.exit(f"compare_torch.py: {failures} setting(s) where attn-trace and PyTorch differ by more than {agree:g}")
    print(f"outputs agree (max |diff| <= {agree:g} against PyTorch)")


if __name__ == "__main__":
    main()
