#!/usr/bin/env python3
"""How long the Python front takes for a small problem: attn_trace.run on the 3-token
worked example (examples/damaged_on_arrival.json), from a path and from a dict, with the
weights read as numpy; the median of --repeats calls after one warm-up
(docs/PERFORMANCE.md#the-python-package).

    PYTHONPATH=build/python python3 bench/python_run.py --repeats 500
"""
import argparse
import json
import statistics
import time
from pathlib import Path

import attn_trace

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "damaged_on_arrival.json"


def median_ms(call, repeats):
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), min(times), max(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=500)
    args = parser.parse_args()
    problem = json.loads(EXAMPLE.read_text())
    cases = {
        "run(path, mask='causal')": lambda: attn_trace.run(str(EXAMPLE), mask="causal"),
        "run(dict, mask='causal')['weights']": lambda: attn_trace.run(problem, mask="causal")["weights"],
        "str(run(path))": lambda: str(attn_trace.run(str(EXAMPLE))),
    }
    print(f"attn_trace {attn_trace.__version__}, {args.repeats} calls each, ms (median, min, max)")
    for name, call in cases.items():
        median, low, high = median_ms(call, args.repeats)
        print(f"{name:<40} {median:8.3f} {low:8.3f} {high:8.3f}")


if __name__ == "__main__":
    main()
