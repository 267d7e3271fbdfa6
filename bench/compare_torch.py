#!/usr/bin/env python3
"""attn-trace's fast path against PyTorch on identical inputs, with the same threads.

Runs `attn-trace bench --dump DIR` (which writes each n's Q, K, V and outputs as
raw float32), loads those very inputs into PyTorch, times
F.scaled_dot_product_attention and the readable matmul-softmax-matmul path,
checks that every output agrees with attn-trace's, and prints the time ratio per
n, next to the machine's sgemm rate (numpy's matmul) as the roofline.

    python3 bench/compare_torch.py --n 1024,4096,8192 --threads 2
    python3 bench/compare_torch.py --n 1024,8192,16384 --causal --repeats 7

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
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--attn-trace", default=None, help="the binary (default: build/attn-trace, then build-*/attn-trace, then PATH)")
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


def sgemm_gflops(threads, size=4096, repeats=5):
    """numpy's float32 matmul rate in a fresh process, with OPENBLAS_CORETYPE and
    OPENBLAS_L2_SIZE unset there (some machines set them, and they slow numpy)."""
    code = (
        "import numpy as np, time\n"
        f"a = np.random.default_rng(0).standard_normal(({size}, {size}), dtype=np.float32); b = a.copy(); a @ b\n"
        "ts = []\n"
        f"for _ in range({repeats}):\n"
        "    t = time.perf_counter(); a @ b; ts.append(time.perf_counter() - t)\n"
        f"print(2 * {size}**3 / sorted(ts)[len(ts) // 2] / 1e9)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    return float(subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True).stdout)


def timed(function, repeats, warmup):
    for _ in range(warmup):
        result = function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), min(times), max(times), result


def main():
    args = parse_args()
    fix_threads(args.threads)
    import numpy as np
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(args.threads)

    binary = find_binary(args.attn_trace)
    lengths = [int(x) for x in args.n.split(",")]
    roofline = sgemm_gflops(args.threads)
    with tempfile.TemporaryDirectory() as dump:
        command = [binary, "bench", "--n", args.n, "--dk", str(args.dk), "--heads", str(args.heads), "--threads", str(args.threads),
                   "--impl", "naive,fast", "--repeats", str(args.repeats), "--warmup", str(args.warmup), "--format", "json", "--dump", dump]
        if args.causal:
            command.append("--causal")
        print("$ " + " ".join(command).replace(dump, "DIR"))
        bench = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
        ours = {(r["n"], r["impl"]): r for r in bench["results"]}

        print(f"torch {torch.__version__}, numpy {np.__version__}, {args.threads} threads, d_k = {args.dk}, heads = {args.heads}, "
              f"{'causal' if args.causal else 'no mask'}, float32; sgemm (numpy 4096^3) {roofline:.1f} GFLOP/s")
        print(f"{'n':>6} {'fast ms':>9} {'naive ms':>9} {'sdpa ms':>9} {'readable':>9} {'sdpa/fast':>9} {'fast GF/s':>9} "
              f"{'% sgemm':>8} {'max |diff|':>10}")
        failures = 0
        for n in lengths:
            shape = (n, args.heads, args.dk)
            q, k, v = (torch.from_numpy(np.fromfile(f"{dump}/n{n}_{name}.bin", dtype=np.float32).reshape(shape)).transpose(0, 1).contiguous()
                       for name in "qkv")  # (H, n, d)
            fast_out = np.fromfile(f"{dump}/n{n}_out_fast.bin", dtype=np.float32).reshape(shape).transpose(1, 0, 2)
            with torch.inference_mode():
                sdpa_ms, _, _, sdpa_out = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=args.causal), args.repeats, args.warmup)
                readable_ms, readable_out = None, None
                if n * n * 4 * args.heads <= args.readable_limit_gib * 2**30:
                    def readable():
                        scores = (q @ k.transpose(-2, -1)) / args.dk ** 0.5
                        if args.causal:
                            scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
                        return torch.softmax(scores, dim=-1) @ v
                    readable_ms, _, _, readable_out = timed(readable, args.repeats, args.warmup)
            diffs = [float(np.abs(sdpa_out.numpy() - fast_out).max())]
            if readable_out is not None:
                diffs.append(float(np.abs(readable_out.numpy() - fast_out).max()))
            diff = max(diffs)
            failures += diff > 1e-4
            fast, naive = ours[(n, "fast")], ours[(n, "naive")]
            naive_ms = f"{naive['median_ms']:9.2f}" if naive["status"] == "ok" else f"{'skipped':>9}"
            readable_text = f"{readable_ms:9.2f}" if readable_ms is not None else f"{'skipped':>9}"
            print(f"{n:>6} {fast['median_ms']:9.2f} {naive_ms} {sdpa_ms:9.2f} {readable_text} {sdpa_ms / fast['median_ms']:9.2f} "
                  f"{fast['gflops']:9.1f} {100 * fast['gflops'] / roofline:7.0f}% {diff:10.2e}")
        if failures:
            sys.exit(f"compare_torch.py: {failures} setting(s) where attn-trace and PyTorch differ by more than 1e-4")
        print("outputs agree (max |diff| <= 1e-4 against SDPA and the readable path)")


if __name__ == "__main__":
    main()
