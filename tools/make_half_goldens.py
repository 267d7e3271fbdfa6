#!/usr/bin/env python3
"""Half-precision goldens (f16, bf16) for attn-trace, from an independent numpy reference.

What the reference does
    It runs attention step by step (docs/COMMANDS.md#run — x, q, k, v, q_rot, k_rot,
    scores, scaled, capped, mask, masked, row_max, exp, row_sum, weights, out, concat,
    final) with the rounding model of docs/PROBLEM.md#dtype-half-precision — values are stored in the dtype; every
    step is computed in float32 from the *stored* values of the steps before it (dot
    products and sums accumulated in float32, in index order) and its result is
    rounded to the dtype once, to nearest even, overflowing to ±inf. In detail:
      q = half(f32(X·W_Q) + b_Q)       the bias joins the f32 dot product before the one rounding
      scaled = half(f32(s) · scores)   s is a float32 constant
      capped = half(c · tanh(scaled / c))            in f32, c a float32 constant
      masked = half(scaled + mask)     (capped with softcap); mask is 0 / −inf
      row_max = the row's largest stored `masked` value (already in the dtype)
      exp = half(exp(masked − row_max))              the difference is f32 and not stored
      row_sum = f32 sum of the stored `exp` values   stays f32, never rounded
      weights = half(exp / row_sum)    out = half(f32 weights·V)   concat is exact
      final = half(f32(concat·W_O) + b_O)
      q_rot = half(x_a·c − x_b·s), half(x_a·s + x_b·c) in f32 arithmetic, with cos and sin
              computed in f64 and rounded to f32 (likewise k_rot)
    exp, tanh, cos and sin are evaluated in float64 and rounded to float32: that is the
    correctly rounded float32 function (bar vanishingly rare ties), independent of any
    libm's own float32 routine.

Why not PyTorch's half ops
    torch's float16/bfloat16 kernels round in other places than the rounding model: softmax on a half
    tensor runs in float32 inside and rounds only its output (there is no stored,
    rounded `exp`); the math SDPA multiplies q and k each by √s instead of scaling the
    scores; matmul accumulation and where it rounds depend on the kernel (oneDNN, cuBLAS,
    the hardware). A golden for the tool's op-by-op model has to round exactly where the rounding model
    rounds, so this reference casts by hand: f16 through numpy's float16 (a float32 →
    float16 cast rounds to nearest even and overflows to inf; asserted at start-up) and
    bf16 by rounding a float32's bits (below).

Usage (after building build/attn-trace)
    /work/pyenv/bin/python tools/make_half_goldens.py              # compare with the tool, write the goldens
    /work/pyenv/bin/python tools/make_half_goldens.py --self-test  # check the reference against --dtype f32
    /work/pyenv/bin/python tools/make_half_goldens.py --no-tool    # write the goldens from the reference alone
    options: --tool PATH (default build/attn-trace), --out DIR (default tests/golden/half),
             --no-write (compare only)
    numpy is a generator-side dependency only; the goldens are plain problem files.

What it checks
    For every problem below and each of f16 and bf16 it runs
    `attn-trace COMMAND FILE --dtype D --format json` (COMMAND run, decode, tiled, grad
    or grad --tiled: decode_reference, tiled_reference and grad_reference below say how
    they round; grad's forward steps come from `run`) and recomputes each step from the
    TOOL's stored values of the steps before it (so a difference in one step is not
    carried into the next). It prints, per problem, dtype and step: the elements, the
    share bit-identical, the share within 1 ulp of the dtype, the largest distance in
    ulps (row_sum and tiled's m, l, u, rescale in float32 ulps), and how many elements miss the golden's own
    tolerance when the tool's whole chain is compared with the reference's whole chain
    (what `attn-trace check` will see). It fails (exit 1) when a step is more than 1 ulp
    off, when a stored value is not a value of the dtype, or when the chain misses the
    golden's tolerance; exit 2 when the tool is missing or refuses the dtype.
    --self-test runs the same stepwise comparison against `--dtype f32` with the half
    rounding replaced by float32 rounding: every step must agree to ~1e-6 relative
    (a check of the step formulas while the tool has no half types).

The goldens
    tests/golden/half/NAME_f16.json and NAME_bf16.json: the problem (inputs written out,
    no random generators), "dtype", and "expect" with one entry per step and head holding
    the REFERENCE's values of its own whole chain, rtol = 2^-10 (f16) or 2^-7 (bf16) and
    atol = the dtype's smallest subnormal (2^-24; 2^-133 for bf16): "within 1 ulp of the
    dtype". Overflowed cells are written "inf"/"-inf". row_sum is float32 by the rounding model; its
    entries hold float32 values with rtol 2^-20 (a few float32 ulps: the order of an
    n-term f32 sum is not fixed by the spec). Every other value is exactly a value of the
    dtype, written as the repr of that Python float.
"""

import argparse
import json
import math
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_golden import to_json  # noqa: E402  (one matrix row per line, as every golden)

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TOOL = ROOT / "build" / "attn-trace"
DEFAULT_OUT = ROOT / "tests" / "golden" / "half"

F32 = np.float32
ROW_SUM_RTOL = 2.0 ** -20  # row_sum stays f32: allow a different summation order
SELF_TEST_TOLERANCE = 4e-6  # |ref − tool| / (largest |value| of the step), f32 vs f32


# ---------------------------------------------------------------------------
# Rounding to the half types
# ---------------------------------------------------------------------------

def round_f16(x):
    """float32 → nearest float16 (ties to even, ±inf past 65504), widened back to float32."""
    with np.errstate(over="ignore"):  # overflow to inf is the point, not an accident
        return np.asarray(x, F32).astype(np.float16).astype(F32)


def round_bf16(x):
    """float32 → nearest bfloat16 (ties to even), widened back to float32.

    bf16 is the top half of a float32, so rounding is integer arithmetic on the bits:
    add 0x7FFF plus the lowest kept bit (the tie goes to the even neighbour), then drop
    the low 16 bits. A carry out of the mantissa bumps the exponent, which turns the
    largest values into inf exactly as IEEE overflow does. NaN must not take that path
    (its carry could make it inf): it is kept a NaN, made quiet, sign and top payload kept.
    """
    x = np.array(x, dtype=F32, order="C")  # any shape, 0-d included
    bits = x.view(np.uint32)
    lsb = (bits >> np.uint32(16)) & np.uint32(1)
    rounded = (bits + np.uint32(0x7FFF) + lsb) & np.uint32(0xFFFF0000)
    quiet_nan = (bits | np.uint32(0x00400000)) & np.uint32(0xFFFF0000)
    return np.where(np.isnan(x), quiet_nan, rounded).astype(np.uint32).view(F32)


def round_f32(x):
    """The --self-test 'half' type: every step rounded to float32 only."""
    return np.asarray(x, F32)


def assert_rounding():
    """The casts this reference stands on, checked before anything is computed."""
    def f16(v):
        return float(round_f16(np.array([v], F32))[0])

    def bf16(v):
        return float(round_bf16(np.array([v], F32))[0])

    assert f16(65519.0) == 65504.0            # below the midpoint 65520: the largest finite f16
    assert f16(65520.0) == math.inf           # the midpoint ties to "even" 2^16: overflow
    assert f16(-65520.0) == -math.inf
    assert f16(1 + 2 ** -11) == 1.0           # tie between 1 and 1 + 2^-10 → even (1)
    assert f16(1 + 3 * 2 ** -11) == 1 + 2 ** -9  # tie → even (1 + 2^-9)
    assert f16(2 ** -25) == 0.0               # half the smallest subnormal → even (0)
    assert f16(3 * 2 ** -26) == 2 ** -24      # above that half → the smallest subnormal
    assert bf16(1 + 2 ** -8) == 1.0           # tie between 1 and 1 + 2^-7 → even (1)
    assert bf16(1 + 3 * 2 ** -8) == 1 + 2 ** -6
    assert bf16(1 + 2 ** -8 + 2 ** -20) == 1 + 2 ** -7  # just past the tie → up
    bf16_max = float(np.array([0x7F7F0000], np.uint32).view(F32)[0])
    assert bf16(float(np.array([0x7F7F7FFF], np.uint32).view(F32)[0])) == bf16_max
    assert bf16(float(np.array([0x7F7F8000], np.uint32).view(F32)[0])) == math.inf  # tie → 2^128
    assert bf16(-math.inf) == -math.inf and bf16(2 ** -133) == 2 ** -133
    assert math.isnan(bf16(float(np.array([0x7FFFFFFF], np.uint32).view(F32)[0])))
    assert math.isnan(bf16(float(np.array([0x7F800001], np.uint32).view(F32)[0])))  # signalling → quiet, not inf


@dataclass(frozen=True)
class Dtype:
    name: str
    round: Callable
    rtol: float       # one ulp relative to the value, at the bottom of a binade
    atol: float       # the smallest subnormal: one ulp near zero
    bits: str         # how a value's bit pattern is read for ulp distances


DTYPES = {
    "f16": Dtype("f16", round_f16, 2.0 ** -10, 2.0 ** -24, "f16"),
    "bf16": Dtype("bf16", round_bf16, 2.0 ** -7, 2.0 ** -133, "bf16"),
    "f32": Dtype("f32", round_f32, 2.0 ** -23, 2.0 ** -149, "f32"),
}


def ordered_bits(x, kind):
    """Integers that count representable values in order (−0 and +0 both 0), for ulp distances."""
    x = np.asarray(x, F32)
    if kind == "f16":
        with np.errstate(over="ignore"):  # ±inf is an f16 value too
            f16 = x.astype(np.float16)
        bits, sign = f16.view(np.uint16).astype(np.int64), 0x8000
    elif kind == "bf16":
        bits, sign = (x.view(np.uint32) >> np.uint32(16)).astype(np.int64), 0x8000
    else:
        bits, sign = x.view(np.uint32).astype(np.int64), 0x80000000
    magnitude = bits & (sign - 1)
    return np.where(bits & sign, -magnitude, magnitude)


def ulp_distance(a, b, kind):
    """Elementwise distance in units of the last place; NaN against NaN is 0, against a number inf."""
    a, b = np.asarray(a, F32), np.asarray(b, F32)
    distance = np.abs(ordered_bits(np.nan_to_num(a), kind) - ordered_bits(np.nan_to_num(b), kind)).astype(np.float64)
    distance[np.isnan(a) != np.isnan(b)] = math.inf
    distance[np.isnan(a) & np.isnan(b)] = 0.0
    both_inf = np.isinf(a) & (a == b)
    distance[both_inf] = 0.0
    return distance


# ---------------------------------------------------------------------------
# float32 arithmetic, in an order fixed here
# ---------------------------------------------------------------------------

def matmul_f32(a, b):
    """a @ b accumulated in float32 over the inner index in order, as a plain loop would.

    A product of two half values is exact in float32 (11 + 11 significant bits ≤ 24), so
    FMA or not makes no difference there; only the order of the additions could, and
    that moves a result by float32 ulps, far inside one half ulp except at a near-tie.
    """
    a, b = np.asarray(a, F32), np.asarray(b, F32)
    acc = np.zeros((a.shape[0], b.shape[1]), F32)
    for t in range(a.shape[1]):
        acc = acc + a[:, t:t + 1] * b[t:t + 1, :]
    return acc


def row_sum_f32(e):
    acc = np.zeros((e.shape[0], 1), F32)
    for j in range(e.shape[1]):
        acc = acc + e[:, j:j + 1]
    return acc


def exp_f32(x):
    return np.exp(np.asarray(x, F32).astype(np.float64)).astype(F32)


def tanh_f32(x):
    return np.tanh(np.asarray(x, F32).astype(np.float64)).astype(F32)


# ---------------------------------------------------------------------------
# The reference pipeline
# ---------------------------------------------------------------------------

def matrix(value):
    """A problem-file matrix (nested lists, "inf"/"-inf"/"nan" strings) as float64."""
    def number(v):
        return float(v) if not isinstance(v, str) else {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}[v]

    def convert(v):
        return [convert(u) for u in v] if isinstance(v, list) else number(v)

    return np.array(convert(value), dtype=np.float64)


def stored_input(value, dt):
    """An input as the tool stores it. The goldens' inputs are exact float32 values, so
    f64 → dtype is one rounding whichever way it goes; for any other value, direct and
    via-f32 rounding can differ at a near-tie, and the rounding model does not say which it means."""
    array = matrix(value)
    assert np.array_equal(array.astype(F32).astype(np.float64), array), "inputs must be exact in float32"
    return dt.round(array.astype(F32))


def mask_matrix(spec, n, m):
    """0 where query i may read key j, −inf where not. Only what these goldens use."""
    if spec in (None, "none"):
        return np.zeros((n, m), F32)
    if spec in ("causal", "causal-upper-left"):
        i, j = np.arange(n)[:, None], np.arange(m)[None, :]
        return np.where(j <= i, F32(0), F32(-math.inf)).astype(F32)
    raise ValueError(f"mask {spec!r}: this reference builds 'none' and 'causal' only")


def rope_rotate(x, rope, positions, dt):
    """RoPE on one head's (rows, d_k) stored values: angles, cos and sin in f64, then f32."""
    d = x.shape[1]
    out = x.copy()
    style = rope.get("style", "interleaved")
    for pair in range(d // 2):
        if "angles_deg" in rope:
            theta = rope["angles_deg"][pair] * math.pi / 180.0
        else:
            theta = rope.get("base", 10000.0) ** (-2.0 * pair / d)
        a, b = (2 * pair, 2 * pair + 1) if style == "interleaved" else (pair, pair + d // 2)
        angle = np.asarray(positions, np.float64) * theta
        c, s = np.cos(angle).astype(F32)[:, None], np.sin(angle).astype(F32)[:, None]
        xa, xb = x[:, a:a + 1], x[:, b:b + 1]
        out[:, a:a + 1] = dt.round(xa * c - xb * s)  # each product and the difference rounded to f32
        out[:, b:b + 1] = dt.round(xa * s + xb * c)
    return out


# The problem keys the reference models; anything else is refused rather than ignored.
SUPPORTED_KEYS = {"title", "tokens", "X", "W_Q", "W_K", "W_V", "b_Q", "b_K", "b_V", "W_O", "b_O",
                  "Q", "K", "V", "heads", "kv_heads", "scale", "softcap", "mask", "rope"}


def reference(problem, dt, tool=None):
    """Every step of `run` as {(name, head): float32 array of stored values}.

    Without `tool` each step reads the reference's own earlier steps (its whole chain:
    the golden values). With `tool` (the tool's steps, same keys) each step reads the
    TOOL's stored earlier steps instead, so that a comparison judges one step at a time.
    """
    unsupported = set(problem) - SUPPORTED_KEYS
    if unsupported or set(problem.get("rope", {})) - {"base", "angles_deg", "style"}:
        raise ValueError(f"this reference does not model {sorted(unsupported) or problem['rope']}")
    steps = {}

    def stored(name, head=None):
        source = steps if tool is None else tool
        if (name, head) not in source:
            raise KeyError(f"the trace has no step {name!r}" + (f" for head {head}" if head is not None else ""))
        return source[(name, head)]

    r = dt.round
    heads = problem.get("heads", 1)
    kv_heads = problem.get("kv_heads", heads)
    with np.errstate(over="ignore", invalid="ignore"):
        if "X" in problem:
            steps[("x", None)] = stored_input(problem["X"], dt)
            for name, w, b in (("q", "W_Q", "b_Q"), ("k", "W_K", "b_K"), ("v", "W_V", "b_V")):
                product = matmul_f32(stored("x"), stored_input(problem[w], dt))
                if b in problem:
                    product = product + stored_input(problem[b], dt)[None, :]
                steps[(name, None)] = r(product)
        else:
            for name in ("Q", "K", "V"):
                steps[(name.lower(), None)] = stored_input(problem[name], dt)

        n, m = steps[("q", None)].shape[0], steps[("k", None)].shape[0]
        d_k = steps[("q", None)].shape[1] // heads
        d_v = steps[("v", None)].shape[1] // kv_heads
        scale = problem.get("scale", "auto")
        s = F32(1.0 / math.sqrt(d_k) if scale == "auto" else 1.0 if scale == "none" else scale)
        cap = problem.get("softcap")
        rope = problem.get("rope")
        mask = mask_matrix(problem.get("mask"), n, m)

        for h in range(heads):
            g = h // (heads // kv_heads)  # the KV head this query head reads
            q = stored("q")[:, h * d_k:(h + 1) * d_k]
            k = stored("k")[:, g * d_k:(g + 1) * d_k]
            if rope is not None:
                # Default positions: keys 0 … m−1, queries the last n of them.
                steps[("q_rot", h)] = rope_rotate(q, rope, np.arange(m - n, m), dt)
                steps[("k_rot", h)] = rope_rotate(k, rope, np.arange(m), dt)
                q, k = stored("q_rot", h), stored("k_rot", h)
            steps[("scores", h)] = r(matmul_f32(q, k.T))
            steps[("scaled", h)] = r(s * stored("scores", h))
            logits = "scaled"
            if cap is not None:
                c = F32(cap)
                steps[("capped", h)] = r(c * tanh_f32(stored("scaled", h) / c))
                logits = "capped"
            steps[("mask", h)] = mask.copy()
            steps[("masked", h)] = r(stored(logits, h) + stored("mask", h))
            z = stored("masked", h)
            if np.any(np.all(z == -math.inf, axis=1)):
                raise ValueError("a row can read no key: not a case these goldens cover")
            steps[("row_max", h)] = z.max(axis=1, keepdims=True)
            steps[("exp", h)] = r(exp_f32(z - stored("row_max", h)))  # f32 difference, not stored
            steps[("row_sum", h)] = row_sum_f32(stored("exp", h))     # f32, never rounded
            steps[("weights", h)] = r(stored("exp", h) / stored("row_sum", h))
            steps[("out", h)] = r(matmul_f32(stored("weights", h), stored("v")[:, g * d_v:(g + 1) * d_v]))

        if heads > 1 or "W_O" in problem:
            steps[("concat", None)] = np.hstack([stored("out", h) for h in range(heads)])
        if "W_O" in problem:
            product = matmul_f32(stored("concat"), stored_input(problem["W_O"], dt))
            if "b_O" in problem:
                product = product + stored_input(problem["b_O"], dt)[None, :]
            steps[("final", None)] = r(product)
    return steps


# ---------------------------------------------------------------------------
# decode, tiled and grad: keys (name, head, at), at None, ("t", t) or ("tile", (qb, kt))
# ---------------------------------------------------------------------------

# Steps the rounding model keeps in float32 (never rounded to the dtype).
F32_STEPS = {"row_sum", "m", "l", "u", "rescale"}


def run_reference(problem, dt, tool=None):
    """`run`'s steps (reference above) with the three-part keys of the commands below."""
    forward = None if tool is None else {(name, head): v for (name, head, at), v in tool.items() if at is None}
    return {(name, head, None): v for (name, head), v in reference(problem, dt, forward).items()}


def reader(steps, tool):
    """stored(name, head, at): the step as the tool stores it (tool given) or as the
    reference's own chain has it."""
    def stored(name, head=None, at=None):
        source = steps if tool is None else tool
        if (name, head, at) not in source:
            raise KeyError(f"the trace has no step {name!r} head {head} {at or ''}")
        return source[(name, head, at)]
    return stored


def given_qkv(problem, dt):
    """q, k, v of a problem that gives Q, K and V (decode's and tiled's goldens do), its
    heads, kv_heads, d_k, d_v, the f32 scale and the mask."""
    if "X" in problem or set(problem) - {"title", "tokens", "Q", "K", "V", "heads", "kv_heads", "mask", "scale"}:
        raise ValueError("decode's and tiled's references model Q, K, V problems with heads, kv_heads, mask, scale")
    q, k, v = (stored_input(problem[name], dt) for name in ("Q", "K", "V"))
    heads = problem.get("heads", 1)
    kv_heads = problem.get("kv_heads", heads)
    d_k, d_v = q.shape[1] // heads, v.shape[1] // kv_heads
    scale = problem.get("scale", "auto")
    s = F32(1.0 / math.sqrt(d_k) if scale == "auto" else 1.0 if scale == "none" else scale)
    return q, k, v, heads, kv_heads, d_k, d_v, s, mask_matrix(problem.get("mask"), q.shape[0], k.shape[0])


def softmax_row(z, dt):
    """weights of masked scores z, as run's softmax: exp rounded, row_sum f32, weights rounded."""
    e = dt.round(exp_f32(z - z.max(axis=1, keepdims=True)))
    return dt.round(e / row_sum_f32(e))


def decode_reference(problem, dt, tool=None):
    """`decode` one query a step (n = m): k_cache and v_cache of each KV head hold the
    stored keys 0 … t; masked = half(half(s · half(q_t K_cacheᵀ)) + mask); weights as
    run's softmax (its exp and row_sum are not stored by decode); out = half(weights V_cache)."""
    q, k, v, heads, kv_heads, d_k, d_v, s, mask = given_qkv(problem, dt)
    assert q.shape[0] == k.shape[0], "decode's reference: n = m"
    steps = {}
    stored = reader(steps, tool)
    r = dt.round
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(q.shape[0]):
            at = ("t", t)
            for g in range(kv_heads):
                steps[("k_cache", g, at)] = k[:t + 1, g * d_k:(g + 1) * d_k]
                steps[("v_cache", g, at)] = v[:t + 1, g * d_v:(g + 1) * d_v]
            for h in range(heads):
                g = h // (heads // kv_heads)
                q_t = q[t:t + 1, h * d_k:(h + 1) * d_k]
                steps[("masked", h, at)] = r(r(s * r(matmul_f32(q_t, stored("k_cache", g, at).T))) + mask[t:t + 1, :t + 1])
                steps[("weights", h, at)] = softmax_row(stored("masked", h, at), dt)
                steps[("out", h, at)] = r(matmul_f32(stored("weights", h, at), stored("v_cache", g, at)))
    return steps


def tiles(n, m, block_q, block_k, mask):
    """(qb, kt, rows, cols) of every tile some query of its block may read, in order."""
    for qb, i0 in enumerate(range(0, n, block_q)):
        for kt, j0 in enumerate(range(0, m, block_k)):
            rows, cols = slice(i0, min(i0 + block_q, n)), slice(j0, min(j0 + block_k, m))
            if not np.all(mask[rows, cols] == -math.inf):
                yield qb, kt, rows, cols


def tiled_reference(problem, dt, tool=None, block_q=2, block_k=2):
    """`tiled` at check's blocks (2 × 2): per tile the masked scores as run stores them;
    the state in f32: m = max(m_old, rowmax), rescale = exp(m_old − m) (1 where m did
    not change), P̃ = half(exp(Z − m)) (not stored), ℓ = rescale ℓ_old + rowsum(P̃),
    u = rescale u_old + f32(P̃ V); out = half(u / ℓ) of the block's last tile."""
    q, k, v, heads, kv_heads, d_k, d_v, s, mask = given_qkv(problem, dt)
    n, m = q.shape[0], k.shape[0]
    steps = {}
    stored = reader(steps, tool)
    r = dt.round
    with np.errstate(over="ignore", invalid="ignore"):
        for h in range(heads):
            g = h // (heads // kv_heads)
            out = np.zeros((n, d_v), F32)
            last = {}  # query block → its last tile so far
            for qb, kt, rows, cols in tiles(n, m, block_q, block_k, mask):
                at = ("tile", (qb, kt))
                k_t, v_t = k[cols, g * d_k:(g + 1) * d_k], v[cols, g * d_v:(g + 1) * d_v]
                steps[("masked", h, at)] = r(r(s * r(matmul_f32(q[rows, h * d_k:(h + 1) * d_k], k_t.T))) + mask[rows, cols])
                z = stored("masked", h, at)
                count = z.shape[0]
                before = last.get(qb)
                m_old = np.full((count, 1), -math.inf, F32) if before is None else stored("m", h, before)
                l_old = np.zeros((count, 1), F32) if before is None else stored("l", h, before)
                u_old = np.zeros((count, d_v), F32) if before is None else stored("u", h, before)
                steps[("m", h, at)] = np.maximum(m_old, z.max(axis=1, keepdims=True))
                m_new = stored("m", h, at)
                steps[("rescale", h, at)] = np.where(m_old == m_new, F32(1), exp_f32(m_old - m_new)).astype(F32)
                p = np.where(z == -math.inf, F32(0), r(exp_f32(z - m_new))).astype(F32)
                alpha = stored("rescale", h, at)
                steps[("l", h, at)] = alpha * l_old + row_sum_f32(p)
                steps[("u", h, at)] = alpha * u_old + matmul_f32(p, v_t)
                last[qb] = at
            for qb, at in last.items():
                rows = slice(qb * block_q, min((qb + 1) * block_q, n))
                out[rows] = r(stored("u", h, at) / stored("l", h, at))
            steps[("out", h, None)] = out
        if heads > 1:
            steps[("concat", None, None)] = np.hstack([stored("out", h) for h in range(heads)])
    return steps


def column_sums_f32(a):
    acc = np.zeros((1, a.shape[1]), F32)
    for i in range(a.shape[0]):
        acc = acc + a[i:i + 1, :]
    return acc


def grad_reference(problem, dt, tool=None, tiled=False, block_q=2, block_k=2):
    """`grad` (or `grad --tiled` at check's 2 × 2 blocks) from run's forward steps, with
    the rounding model's reading for gradients (docs/PROBLEM.md#dtype-half-precision): each
    step computed in f32 from the stored values before it and rounded once; a step that
    sums products (a KV head's grad_k and grad_v over its query heads, a tiled gradient
    over key tiles, grad_x over q, k and v, the weights' gradients) sums them in f32 and
    rounds once. d_out is an input: stored in the dtype. Untiled, per head:
      grad_weights = half(dO Vᵀ); inner = half(f32 rowsum(dA ⊙ A))   (not stored)
      grad_masked = half(A ⊙ (dA − inner)); grad_scaled = grad_masked; grad_scores = half(s · dZ)
      grad_q = half(dS K); K's and V's parts f32(dSᵀ Q) and f32(Aᵀ dO), summed per KV head.
    Tiled: lse = half(row_max + f32(ln row_sum)), delta = half(f32 rowsum(dO ⊙ O));
    per tile p = half(exp(Z − lse)) with Z recomputed as run stores masked, grad_p =
    half(dO V_jᵀ), grad_s = half(p ⊙ (grad_p − delta)), then half(s · grad_s) times K_j,
    Q_i and p times dO accumulated in f32 over the tiles."""
    forward_problem = {key: value for key, value in problem.items() if key != "d_out"}
    if problem.get("softcap") is not None or problem.get("rope") is not None:
        raise ValueError("grad's reference models problems without softcap and RoPE")
    forward = run_reference(forward_problem, dt, tool)
    steps = {}
    stored = reader(steps, None if tool is None else {**forward, **tool})
    fwd = (lambda name, head=None: forward[(name, head, None)]) if tool is None else stored
    r = dt.round
    heads = problem.get("heads", 1)
    kv_heads = problem.get("kv_heads", heads)
    group = heads // kv_heads
    q_all, k_all, v_all = fwd("q"), fwd("k"), fwd("v")
    n, m = q_all.shape[0], k_all.shape[0]
    d_k, d_v = q_all.shape[1] // heads, v_all.shape[1] // kv_heads
    scale = problem.get("scale", "auto")
    s = F32(1.0 / math.sqrt(d_k) if scale == "auto" else 1.0 if scale == "none" else scale)
    mask = mask_matrix(problem.get("mask"), n, m)
    width = problem["W_O"][0].__len__() if "W_O" in problem else heads * d_v
    d_out = stored_input(problem["d_out"], dt) if "d_out" in problem else np.ones((n, width), F32)
    with np.errstate(over="ignore", invalid="ignore"):
        if "W_O" in problem:
            w_o = stored_input(problem["W_O"], dt)
            steps[("grad_final", None, None)] = d_out
            steps[("grad_concat", None, None)] = r(matmul_f32(d_out, w_o.T))
            steps[("grad_W_O", None, None)] = r(matmul_f32(fwd("concat").T, d_out))
            if "b_O" in problem:
                steps[("grad_b_O", None, None)] = r(column_sums_f32(d_out))
        else:
            steps[("grad_concat", None, None)] = d_out
        k_parts = [np.zeros((m, d_k), F32) for _ in range(kv_heads)]
        v_parts = [np.zeros((m, d_v), F32) for _ in range(kv_heads)]
        for h in range(heads):
            g = h // group
            q, k, v = (x[:, c * d:(c + 1) * d] for x, c, d in ((q_all, h, d_k), (k_all, g, d_k), (v_all, g, d_v)))
            steps[("grad_out", h, None)] = stored("grad_concat")[:, h * d_v:(h + 1) * d_v]
            d_o = stored("grad_out", h)
            if not tiled:
                a = fwd("weights", h)
                steps[("grad_weights", h, None)] = r(matmul_f32(d_o, v.T))
                d_a = stored("grad_weights", h)
                inner = r(row_sum_f32(d_a * a))
                steps[("grad_masked", h, None)] = r(a * (d_a - inner))
                steps[("grad_scaled", h, None)] = stored("grad_masked", h)
                steps[("grad_scores", h, None)] = r(s * stored("grad_scaled", h))
                d_s = stored("grad_scores", h)
                steps[("grad_q", h, None)] = r(matmul_f32(d_s, k))
                k_parts[g] = k_parts[g] + matmul_f32(d_s.T, q)
                v_parts[g] = v_parts[g] + matmul_f32(a.T, d_o)
                continue
            row_max, row_sum, out = fwd("row_max", h), fwd("row_sum", h), fwd("out", h)
            steps[("lse", h, None)] = r(row_max + np.log(row_sum.astype(np.float64)).astype(F32))
            steps[("delta", h, None)] = r(row_sum_f32(d_o * out))
            lse, delta = stored("lse", h), stored("delta", h)
            d_q, d_k_h, d_v_h = np.zeros((n, d_k), F32), np.zeros((m, d_k), F32), np.zeros((m, d_v), F32)
            for qb, kt, rows, cols in tiles(n, m, block_q, block_k, mask):
                at = ("tile", (qb, kt))
                z = r(r(s * r(matmul_f32(q[rows], k[cols].T))) + mask[rows, cols])
                steps[("p", h, at)] = np.where(z == -math.inf, F32(0), r(exp_f32(z - lse[rows]))).astype(F32)
                steps[("grad_p", h, at)] = r(matmul_f32(d_o[rows], v[cols].T))
                p = stored("p", h, at)
                steps[("grad_s", h, at)] = r(p * (stored("grad_p", h, at) - delta[rows]))
                d_s = r(s * stored("grad_s", h, at))
                d_q[rows] = d_q[rows] + matmul_f32(d_s, k[cols])
                d_k_h[cols] = d_k_h[cols] + matmul_f32(d_s.T, q[rows])
                d_v_h[cols] = d_v_h[cols] + matmul_f32(p.T, d_o[rows])
            steps[("grad_q", h, None)] = r(d_q)
            k_parts[g] = k_parts[g] + d_k_h
            v_parts[g] = v_parts[g] + d_v_h
        for g in range(kv_heads):
            steps[("grad_k", g, None)] = r(k_parts[g])
            steps[("grad_v", g, None)] = r(v_parts[g])
        if "X" in problem:
            x = stored_input(problem["X"], dt)
            grad_q = np.hstack([stored("grad_q", h) for h in range(heads)])
            grad_k = np.hstack([stored("grad_k", g) for g in range(kv_heads)])
            grad_v = np.hstack([stored("grad_v", g) for g in range(kv_heads)])
            for name, grad in (("Q", grad_q), ("K", grad_k), ("V", grad_v)):
                steps[(f"grad_W_{name}", None, None)] = r(matmul_f32(x.T, grad))
                if f"b_{name}" in problem:
                    steps[(f"grad_b_{name}", None, None)] = r(column_sums_f32(grad))
            w_q, w_k, w_v = (stored_input(problem[w], dt) for w in ("W_Q", "W_K", "W_V"))
            from_kv = matmul_f32(grad_k, w_k.T) + matmul_f32(grad_v, w_v.T)
            steps[("grad_x", None, None)] = r(matmul_f32(grad_q, w_q.T) + from_kv)
    return steps


COMMANDS = {
    "run": run_reference,
    "decode": decode_reference,
    "tiled": tiled_reference,
    "grad": grad_reference,
    "grad --tiled": lambda problem, dt, tool=None: grad_reference(problem, dt, tool, tiled=True),
}


# ---------------------------------------------------------------------------
# The problems (inputs written into each golden; drawn once from fixed seeds)
# ---------------------------------------------------------------------------

def grid(rng, shape, limit, denominator):
    """Whole numbers in [−limit, limit] over a power of two: exact in float32."""
    return (rng.integers(-limit, limit + 1, size=shape) / denominator).tolist()


def problems():
    """name → (command, problem dict). Values with ≤ 8 significant bits are exact in f16 and bf16
    alike; mha_bias's have up to 12, so the tool's own rounding of inputs is checked too."""
    rng = np.random.default_rng(20260523)
    out = {}
    out["qkv_causal"] = {
        "title": "half golden: Q, K, V given, causal mask, 3 × 4",
        "tokens": ["a", "b", "c"],
        "Q": grid(rng, (3, 4), 40, 16), "K": grid(rng, (3, 4), 40, 16), "V": grid(rng, (3, 4), 40, 16),
        "mask": "causal",
    }
    out["mha_bias"] = {
        "title": "half golden: X with W_Q, W_K, W_V, W_O and every bias, 2 heads of d_k 3",
        "X": grid(rng, (4, 6), 3000, 1024),
        "W_Q": grid(rng, (6, 6), 700, 1024), "W_K": grid(rng, (6, 6), 700, 1024), "W_V": grid(rng, (6, 6), 700, 1024),
        "b_Q": grid(rng, 6, 500, 1024), "b_K": grid(rng, 6, 500, 1024), "b_V": grid(rng, 6, 500, 1024),
        "W_O": grid(rng, (6, 5), 700, 1024), "b_O": grid(rng, 5, 500, 1024),
        "heads": 2,
    }
    out["softcap"] = {
        "title": "half golden: softcap 5 (scaled scores up to about ±20), causal",
        "Q": grid(rng, (4, 4), 16, 4), "K": grid(rng, (4, 4), 16, 4), "V": grid(rng, (4, 4), 32, 16),
        "softcap": 5.0, "mask": "causal",
    }
    out["rope"] = {
        "title": "half golden: RoPE base 10000, interleaved pairs, 2 heads of d_k 4",
        "Q": grid(rng, (5, 8), 32, 16), "K": grid(rng, (5, 8), 32, 16), "V": grid(rng, (5, 8), 32, 16),
        "heads": 2, "rope": {"base": 10000, "style": "interleaved"},
    }
    # In f16: scores past −65504 overflow to −inf (those keys drop out as masked ones
    # do); the small query's row spreads over about 18 (scaled), so one exp falls below
    # 2^-25 and becomes 0 where f64 keeps 1e-8, and one lands among the subnormals
    # (e^-12.8 ≈ 2.7e-6); final's first column overflows to +inf. bf16 has the range for
    # all of it. No +inf before `final`: inf − inf in the softmax would make NaN rows.
    out["overflow"] = {
        "title": "half golden: X about 200, f16 overflow (±inf) and underflow (0)",
        "tokens": ["big", "neg", "small"],
        "X": [[200, 150], [-180, 220], [0.03125, -0.03125]],
        "W_Q": [[1, 0], [0, 1]],
        "W_K": [[-1.5, 0.5], [-0.5, -1.5]],
        "W_V": [[1, 0], [0, 1]],
        "W_O": [[256, 1], [256, -1]],
        "b_O": [0.5, 0.25],
    }
    cases = {name: ("run", problem) for name, problem in out.items()}
    rng = np.random.default_rng(20260601)  # its own draws: the run problems above keep theirs
    cases["decode_gqa"] = ("decode", {
        "title": "half golden (decode): 4 query heads on 2 KV heads, causal, one query a step",
        "Q": grid(rng, (5, 12), 40, 16), "K": grid(rng, (5, 6), 40, 16), "V": grid(rng, (5, 6), 40, 16),
        "heads": 4, "kv_heads": 2, "mask": "causal",
    })
    # 2 × 2 tiles of a causal 5 × 5: the diagonal tiles are partly masked, those above skipped.
    cases["tiled_causal"] = ("tiled", {
        "title": "half golden (tiled, 2 × 2 tiles): causal 5 × 5, 2 heads",
        "Q": grid(rng, (5, 8), 48, 16), "K": grid(rng, (5, 8), 48, 16), "V": grid(rng, (5, 8), 40, 16),
        "heads": 2, "mask": "causal",
    })
    cases["grad_bias"] = ("grad", {
        "title": "half golden (grad): X with W_Q, W_K, W_V, W_O and every bias, 2 heads, d_out given",
        "X": grid(rng, (4, 6), 3000, 1024),
        "W_Q": grid(rng, (6, 6), 700, 1024), "W_K": grid(rng, (6, 6), 700, 1024), "W_V": grid(rng, (6, 6), 700, 1024),
        "b_Q": grid(rng, 6, 500, 1024), "b_K": grid(rng, 6, 500, 1024), "b_V": grid(rng, 6, 500, 1024),
        "W_O": grid(rng, (6, 5), 700, 1024), "b_O": grid(rng, 5, 500, 1024),
        "heads": 2, "d_out": grid(rng, (4, 5), 64, 32),
    })
    cases["grad_gqa"] = ("grad", {
        "title": "half golden (grad): X, 4 query heads on 2 KV heads (grad_k, grad_v sum 2 heads each), causal",
        "X": grid(rng, (4, 8), 3000, 1024),
        "W_Q": grid(rng, (8, 8), 700, 1024), "W_K": grid(rng, (8, 4), 700, 1024), "W_V": grid(rng, (8, 4), 700, 1024),
        "heads": 4, "kv_heads": 2, "mask": "causal", "d_out": grid(rng, (4, 8), 64, 32),
    })
    cases["grad_tiled_gqa"] = ("grad --tiled", {
        "title": "half golden (grad --tiled, 2 × 2 tiles): 2 query heads on 1 KV head, causal 5 × 5",
        "Q": grid(rng, (5, 8), 48, 16), "K": grid(rng, (5, 4), 48, 16), "V": grid(rng, (5, 4), 40, 16),
        "heads": 2, "kv_heads": 1, "mask": "causal", "d_out": grid(rng, (5, 8), 64, 32),
    })
    return cases


# ---------------------------------------------------------------------------
# The tool
# ---------------------------------------------------------------------------

class ToolUnusable(Exception):
    pass


def run_tool(tool, problem, dtype, command="run"):
    """`attn-trace COMMAND FILE --dtype D --format json`; {(name, head, at): float64 array},
    at None, ("t", t) or ("tile", (qb, kt)). grad's trace holds its gradients only: run's
    forward steps, which grad reads, are added from `run`."""
    if command.startswith("grad"):
        forward = trace_steps(tool, {k: v for k, v in problem.items() if k != "d_out"}, dtype, "run")
        return {**forward, **trace_steps(tool, problem, dtype, command)}
    return trace_steps(tool, problem, dtype, command)


def trace_steps(tool, problem, dtype, command):
    """One command's trace as {(name, head, at): float64 array}."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(problem, f)
        path = f.name
    try:
        result = subprocess.run([str(tool), *command.split(), path, "--dtype", dtype, "--format", "json"],
                                capture_output=True, text=True, timeout=60)
    finally:
        Path(path).unlink()
    if result.returncode != 0:
        message = "\n  ".join((result.stderr.strip() or result.stdout.strip()).splitlines())
        if result.returncode == 2 and "dtype" in message:
            raise ToolUnusable(f"{tool} does not accept --dtype {dtype} yet (exit 2):\n  {message}\n"
                               "build attn-trace with half-precision support (docs/PROBLEM.md#dtype-half-precision) first, "
                               "or use --self-test (f32) or --no-tool (goldens from the reference alone)")
        raise ToolUnusable(f"{tool} {command} --dtype {dtype} failed (exit {result.returncode}):\n  {message}")
    trace = json.loads(result.stdout)
    if trace.get("problem", {}).get("dtype") != dtype:  # an option silently ignored would compare f64
        raise ToolUnusable(f"{tool} {command} --dtype {dtype} reports dtype {trace.get('problem', {}).get('dtype')!r}")
    steps = {}
    for step in trace["steps"]:
        if "batch" in step and step["batch"] != 0:
            continue
        data = matrix(step["data"])
        if data.ndim == 1:
            data = data[None, :]
        at = ("t", step["t"]) if "t" in step else ("tile", tuple(step["tile"])) if "tile" in step else None
        steps[(step["name"], step.get("head"), at)] = data
    return steps


def as_stored(values, dt, name):
    """The tool's float64 JSON numbers as float32, and how many are not values of the type
    they should be stored in (the dtype; float32 for row_sum)."""
    narrowed = values.astype(F32)
    kind_round = round_f32 if name in F32_STEPS else dt.round
    exact = (narrowed.astype(np.float64) == values) | np.isnan(values)
    exact &= (kind_round(narrowed) == narrowed) | np.isnan(narrowed)
    return narrowed, int(np.count_nonzero(~exact))


# ---------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------

def within_tolerance(got, want, atol, rtol):
    """`attn-trace check`'s rule: |got − want| ≤ atol + rtol·|want|; non-finite only matches itself."""
    got, want = got.astype(np.float64), want.astype(np.float64)
    finite = np.isfinite(want)
    with np.errstate(invalid="ignore"):
        ok = np.where(finite, np.abs(got - want) <= atol + rtol * np.abs(want), False)
    ok |= ~finite & ((got == want) | (np.isnan(got) & np.isnan(want)))
    return ok


def tolerances(name, dt):
    return (dt.atol, ROW_SUM_RTOL) if name in F32_STEPS else (dt.atol, dt.rtol)


def compare_half(name, command, problem, dt, tool):
    """Rows of the table for one problem and one half type; returns (rows, failed)."""
    tool_steps, unstored = {}, {}
    for key, values in tool.items():
        tool_steps[key], unstored[key] = as_stored(values, dt, key[0])
    stepwise = COMMANDS[command](problem, dt, tool=tool_steps)
    chain = COMMANDS[command](problem, dt)
    rows, failed = [], False
    unchecked = sorted({key[0] for key in tool_steps} - {key[0] for key in chain})
    if unchecked:
        print(f"note: {name} {dt.name}: the tool's steps {', '.join(unchecked)} have no reference here (not checked)")
    for step in step_names(chain):
        keys = [key for key in chain if key[0] == step]
        missing = [key for key in keys if key not in tool_steps]
        if missing:
            rows.append((name, command, dt.name, step, "missing from the tool's trace", "", "", "", ""))
            failed = True
            continue
        kind = "f32" if step in F32_STEPS else dt.bits
        got = np.concatenate([tool_steps[k].ravel() for k in keys])
        want = np.concatenate([stepwise[k].ravel() for k in keys])
        golden = np.concatenate([chain[k].ravel() for k in keys])
        distance = ulp_distance(got, want, kind)
        atol, rtol = tolerances(step, dt)
        chain_misses = int(np.count_nonzero(~within_tolerance(got, golden, atol, rtol)))
        not_stored = sum(unstored[k] for k in keys)
        worst = distance.max()
        bad = worst > (4 if step in F32_STEPS else 1) or chain_misses or not_stored
        failed |= bool(bad)
        rows.append((name, command, dt.name, step, str(got.size),
                     f"{100 * np.mean(distance == 0):.1f}", f"{100 * np.mean(distance <= 1):.1f}",
                     ("inf" if math.isinf(worst) else f"{int(worst)}") + (" (f32)" if kind == "f32" else ""),
                     f"{chain_misses}" + (f", {not_stored} not {dt.name}" if not_stored else "") + ("  <-- FAIL" if bad else "")))
    return rows, failed


def compare_self_test(name, problem, tool):
    """Stepwise reference in f32 against the tool's --dtype f32 trace."""
    dt = DTYPES["f32"]
    tool_steps = {key: values.astype(F32) for key, values in tool.items()}
    stepwise = run_reference(problem, dt, tool=tool_steps)
    rows, failed = [], False
    for step in step_names(stepwise):
        keys = [key for key in stepwise if key[0] == step]
        if any(key not in tool_steps for key in keys):
            rows.append((name, "f32", step, "missing from the tool's trace", "", "", "", ""))
            failed = True
            continue
        got = np.concatenate([tool_steps[k].ravel() for k in keys]).astype(np.float64)
        want = np.concatenate([stepwise[k].ravel() for k in keys]).astype(np.float64)
        finite = np.isfinite(want)
        if not np.array_equal(np.isfinite(got), finite) or np.any(got[~finite] != want[~finite]):
            rows.append((name, "f32", step, str(got.size), "", "", "", "non-finite cells differ  <-- FAIL"))
            failed = True
            continue
        difference = np.abs(got[finite] - want[finite])
        step_scale = max(np.abs(want[finite]).max(initial=0.0), 1e-30)
        nonzero = np.abs(want[finite]) > 0
        relative = (difference[nonzero] / np.abs(want[finite][nonzero])).max(initial=0.0)
        normalised = difference.max(initial=0.0) / step_scale
        bad = normalised > SELF_TEST_TOLERANCE
        failed |= bool(bad)
        distance = ulp_distance(got.astype(F32), want.astype(F32), "f32")
        rows.append((name, "f32", step, str(got.size), f"{100 * np.mean(distance == 0):.1f}",
                     f"{int(distance.max())}", f"{relative:.2e}", f"{normalised:.2e}" + ("  <-- FAIL" if bad else "")))
    return rows, failed


def step_names(steps):
    names = []
    for name, *_ in steps:
        if name not in names:
            names.append(name)
    return names


def print_table(header, rows):
    widths = [max(len(str(row[i])) for row in [header] + rows) for i in range(len(header))]
    for row in [header] + rows:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())


# ---------------------------------------------------------------------------
# Writing the goldens
# ---------------------------------------------------------------------------

def as_json_values(values):
    """float32 array → nested lists of Python floats (exact), ±inf as strings, −0 as 0."""
    def convert(x):
        if isinstance(x, list):
            return [convert(v) for v in x]
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        assert not math.isnan(x), "NaN in a golden value"
        return float(x) + 0.0

    return convert(values.astype(np.float64).tolist())


def golden(command, problem, dt):
    chain = COMMANDS[command](problem, dt)
    expect = []
    for (name, head, at), values in chain.items():
        atol, rtol = tolerances(name, dt)
        entry = {"name": name}
        if head is not None:
            entry["head"] = head
        if at is not None:
            entry[at[0]] = at[1] if at[0] == "t" else list(at[1])
        entry.update({"atol": atol, "rtol": rtol, "data": as_json_values(values)})
        expect.append(entry)
    return {**problem, "dtype": dt.name, "expect": expect}


def verify_golden(path, command, dt):
    """Reload a written golden: the reference rerun on the file's own problem must give the
    file's expect values, and each value must be one the dtype can hold."""
    loaded = json.loads(path.read_text())
    problem = {k: v for k, v in loaded.items() if k not in ("dtype", "expect")}
    assert loaded["dtype"] == dt.name
    chain = COMMANDS[command](problem, dt)
    for entry in loaded["expect"]:
        at = ("t", entry["t"]) if "t" in entry else ("tile", tuple(entry["tile"])) if "tile" in entry else None
        want = chain[(entry["name"], entry.get("head"), at)]
        data = matrix(entry["data"]).astype(F32)
        if data.ndim == 1:
            data = data[None, :]
        assert np.array_equal(data, want), f"{path.name}: {entry['name']} does not round-trip"
        kind_round = round_f32 if entry["name"] in F32_STEPS else dt.round
        assert np.array_equal(kind_round(data), data), f"{path.name}: {entry['name']} holds a value not in {dt.name}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--self-test", action="store_true", help="compare the f32 reference with --dtype f32; write nothing")
    parser.add_argument("--no-tool", action="store_true", help="write the goldens without running attn-trace")
    parser.add_argument("--no-write", action="store_true", help="compare only")
    parser.add_argument("--tool", type=Path, default=DEFAULT_TOOL)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()

    assert_rounding()
    cases = problems()
    needs_tool = args.self_test or not args.no_tool
    if needs_tool and not args.tool.is_file():
        print(f"make_half_goldens: {args.tool} not found: build attn-trace first (or --tool PATH)", file=sys.stderr)
        return 2

    failed = False
    try:
        if args.self_test:
            rows = []
            for name, (command, problem) in cases.items():
                if command != "run":
                    continue
                case_rows, case_failed = compare_self_test(name, problem, run_tool(args.tool, problem, "f32"))
                rows += case_rows
                failed |= case_failed
            print_table(("problem", "dtype", "step", "elements", "bit-identical %", "max ulp",
                         "max rel err", "max err / step max"), rows)
            print(f"\nself-test {'FAILED' if failed else 'passed'}: reference (half rounding → f32) vs "
                  f"attn-trace --dtype f32, tolerance {SELF_TEST_TOLERANCE:g} of each step's largest value")
            return 1 if failed else 0

        if not args.no_tool:
            rows = []
            for name, (command, problem) in cases.items():
                for dtype in ("f16", "bf16"):
                    case_rows, case_failed = compare_half(name, command, problem, DTYPES[dtype], run_tool(args.tool, problem, dtype, command))
                    rows += case_rows
                    failed |= case_failed
            print_table(("problem", "command", "dtype", "step", "elements", "bit-identical %", "≤ 1 ulp %", "max ulp",
                         "golden misses"), rows)
            print("\n(stepwise: each step recomputed from the tool's stored earlier steps; golden misses: "
                  "the tool's values outside the golden's tolerance of the reference's whole chain)")
    except ToolUnusable as error:
        print(f"make_half_goldens: {error}", file=sys.stderr)
        return 2

    if not args.no_write:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, (command, problem) in cases.items():
            for dtype in ("f16", "bf16"):
                path = args.out / f"{name}_{dtype}.json"
                path.write_text(to_json(golden(command, problem, DTYPES[dtype])) + "\n")
                verify_golden(path, command, DTYPES[dtype])
                print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    if failed:
        print("make_half_goldens: the tool and the reference disagree (FAIL rows above)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
