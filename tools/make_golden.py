#!/usr/bin/env python3
"""Generate PyTorch-checked golden problem files for attn-trace.

Usage:
    pip install torch numpy && python3 tools/make_golden.py

Every file written is a complete attn-trace problem file
(docs/PROBLEM.md#the-problem-file) whose `expect` list
(docs/PROBLEM.md#expect-values-for-attn-trace-check) holds the intermediate steps
(docs/COMMANDS.md#run) computed by PyTorch in float64: nn.MultiheadAttention for the module cases,
F.scaled_dot_product_attention (plus an explicit softmax for the weights) for
the cases where Q, K, V are given directly, and a direct numpy formula for the
RoPE rotation.  All inputs are written out as nested lists, so the files are
self-contained and do not depend on any random generator.

After writing, every file is re-loaded and checked against an independent
numpy re-implementation of the attention maths (`verify_file`), so that a bug
in the torch glue code below cannot slip into the goldens unnoticed.

The output is deterministic: fixed seeds, one CPU thread, float64 everywhere.
"""

import json
import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_DIR = ROOT / "tests" / "golden"
EXAMPLES_DIR = ROOT / "examples"

ATOL = 1e-10                  # tolerance written into every golden entry
MAX_FILE_BYTES = 60_000       # keep the files small enough to read and diff
TORCH = f"torch {torch.__version__.split('+')[0]}"

torch.set_default_dtype(torch.float64)
torch.set_num_threads(1)      # same reduction order on every run

# Top-level keys a problem file may contain (docs/PROBLEM.md#all-keys-at-a-glance).
PROBLEM_KEYS = {
    "title", "tokens", "source_tokens", "X", "X_source", "W_Q", "W_K", "W_V",
    "b_Q", "b_K", "b_V", "W_O", "b_O", "weights_layout", "in_proj_weight",
    "in_proj_bias", "out_proj.weight", "out_proj.bias", "Q", "K", "V", "heads",
    "kv_heads", "scale", "mask", "empty_rows", "lengths", "rope", "positions",
    "source_positions", "softcap", "alibi", "expect", "sparse", "dropout", "mla", "d_out",
}

# Order of the steps in a trace (docs/COMMANDS.md#run); `expect` lists follow it.
STEP_ORDER = ["c_kv", "c_q", "q", "k", "v", "q_rope", "k_rope", "q_rot", "k_rot", "q_latent",
              "scores", "scaled", "capped", "mask", "reach", "masked", "weights", "keep", "dropped",
              "out", "concat", "final"]  # (gradients are listed as torch gives them)


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------

def as_list(values, allow_nan=False):
    """Tensor / array -> nested lists of Python floats; ±inf (and, where allowed, NaN) become strings."""
    array = values.detach().numpy() if torch.is_tensor(values) else np.asarray(values)

    def convert(x):
        if isinstance(x, list):
            return [convert(v) for v in x]
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        if math.isnan(x):
            assert allow_nan, "NaN in a golden value"
            return "nan"
        return float(x) + 0.0  # + 0.0 turns -0.0 into 0.0

    return convert(array.astype(np.float64).tolist())


def step(name, data, head=None, batch=None, atol=ATOL, tile=None, row=None, allow_nan=False):
    """One `expect` entry (docs/PROBLEM.md#expect-values-for-attn-trace-check)."""
    entry = {"name": name}
    if head is not None:
        entry["head"] = head
    if batch is not None:
        entry["batch"] = batch
    if tile is not None:
        entry["tile"] = list(tile)
    if row is not None:
        entry["row"] = row
    entry["atol"] = atol
    entry["data"] = as_list(data, allow_nan)
    return entry


def randn(*shape, scale=1.0):
    return torch.randn(*shape) * scale


def split_heads(x, heads):
    """(n, H·d) -> (H, n, d): head h takes columns h·d … (h+1)·d − 1."""
    n, width = x.shape
    return x.reshape(n, heads, width // heads).transpose(0, 1)


def join_heads(x):
    """(H, n, d) -> (n, H·d), the inverse of split_heads."""
    heads, n, d = x.shape
    return x.transpose(0, 1).reshape(n, heads * d)


def causal_allowed(n, m, bottom_right=False):
    """Boolean (n, m), True where query i may read key j.

    Top-left alignment (torch is_causal=True): j <= i.
    Bottom-right alignment: j <= i + (m - n).
    """
    offset = (m - n) if bottom_right else 0
    i = torch.arange(n).unsqueeze(1)
    j = torch.arange(m).unsqueeze(0)
    return j <= i + offset


def alibi_bias(heads, n, m):
    """(H, n, m) ALiBi bias: −slope_h·|i + (m − n) − j|, slope_h = 2^(−8(h+1)/H)."""
    slopes = torch.tensor([2.0 ** (-8.0 * (h + 1) / heads) for h in range(heads)])
    i = torch.arange(n).unsqueeze(1)
    j = torch.arange(m).unsqueeze(0)
    distance = (i + (m - n) - j).abs().to(torch.float64)
    return -slopes.view(heads, 1, 1) * distance


def sort_steps(entries):
    """Order expect entries as a trace prints them: batch, step, head."""
    def key(e):
        return (e.get("batch", -1), STEP_ORDER.index(e["name"]), e.get("head", -1))
    return sorted(entries, key=key)


# ---------------------------------------------------------------------------
# Torch reference for problems given as Q, K, V (one or many heads)
# ---------------------------------------------------------------------------

def attend(q, k, v, allowed=None, bias=None, softcap=None, scale=None):
    """Scaled dot-product attention of one head, step by step, in torch.

    q (n, d_k), k (m, d_k), v (m, d_v); `allowed` a boolean (n, m) mask,
    `bias` an additive (n, m) matrix (ALiBi).  Returns a dict of the steps
    (docs/COMMANDS.md#run).  The output is taken from F.scaled_dot_product_attention
    whenever it can express the problem (no softcap), and cross-checked against the
    explicit weights @ V.
    """
    n, m = q.shape[0], k.shape[0]
    scale = 1.0 / math.sqrt(q.shape[1]) if scale is None else scale
    steps = {"scores": q @ k.T}
    steps["scaled"] = steps["scores"] * scale
    logits = steps["scaled"]
    if softcap is not None:
        steps["capped"] = softcap * torch.tanh(steps["scaled"] / softcap)
        logits = steps["capped"]

    mask = torch.zeros(n, m)
    if bias is not None:
        mask = mask + bias
    if allowed is not None:
        mask = mask.masked_fill(~allowed, -math.inf)
    steps["mask"] = mask
    steps["masked"] = logits + mask
    steps["weights"] = torch.softmax(steps["masked"], dim=-1)
    explicit_out = steps["weights"] @ v

    if softcap is None:
        sdpa_out = F.scaled_dot_product_attention(
            q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0),
            attn_mask=mask.unsqueeze(0), scale=scale).squeeze(0)
        assert torch.allclose(sdpa_out, explicit_out, rtol=0, atol=1e-13)
        steps["out"] = sdpa_out
    else:
        steps["out"] = explicit_out
    return steps


def per_head_entries(head_steps, names):
    """Expect entries for the given step names, for every head."""
    return [step(name, steps[name], head=h)
            for h, steps in enumerate(head_steps) for name in names]


# ---------------------------------------------------------------------------
# nn.MultiheadAttention cases
# ---------------------------------------------------------------------------

def make_mha(embed_dim, heads, seed, kdim=None):
    """A float64 nn.MultiheadAttention with every parameter drawn from randn.

    torch initialises the biases to zero; random biases make the golden files
    test that the biases are applied (and in the right place).
    """
    torch.manual_seed(seed)
    mha = torch.nn.MultiheadAttention(embed_dim, heads, bias=True, batch_first=True,
                                      kdim=kdim, vdim=kdim, dtype=torch.float64)
    with torch.no_grad():
        for param in mha.parameters():
            fan_in = param.shape[1] if param.dim() == 2 else embed_dim
            scale = 1.0 / math.sqrt(fan_in) if param.dim() == 2 else 0.5
            param.copy_(randn(*param.shape, scale=scale))
    return mha.eval()


def mha_projections(mha):
    """(W_Q, W_K, W_V, b_Q, b_K, b_V) in torch layout (out, in)."""
    if mha._qkv_same_embed_dim:
        w_q, w_k, w_v = mha.in_proj_weight.detach().chunk(3)
    else:
        w_q, w_k, w_v = (mha.q_proj_weight.detach(), mha.k_proj_weight.detach(),
                         mha.v_proj_weight.detach())
    b_q, b_k, b_v = mha.in_proj_bias.detach().chunk(3)
    return w_q, w_k, w_v, b_q, b_k, b_v


def mha_weight_keys(mha, layout):
    """The problem-file keys holding the module's weights, in `layout`.

    "torch":  the module's own key names (in_proj_weight, out_proj.weight …),
              or W_Q/W_K/W_V (out, in) when q/k/v have separate weights.
    "math":   W_Q … W_O transposed to (in, out), plus b_Q … b_O.
    """
    w_q, w_k, w_v, b_q, b_k, b_v = mha_projections(mha)
    w_o, b_o = mha.out_proj.weight.detach(), mha.out_proj.bias.detach()
    if layout == "torch" and mha._qkv_same_embed_dim:
        return {"weights_layout": "torch",
                "in_proj_weight": as_list(mha.in_proj_weight),
                "in_proj_bias": as_list(mha.in_proj_bias),
                "out_proj.weight": as_list(w_o),
                "out_proj.bias": as_list(b_o)}
    transpose = (lambda w: w) if layout == "torch" else (lambda w: w.T)
    keys = {"weights_layout": layout}
    for name, w in (("W_Q", w_q), ("W_K", w_k), ("W_V", w_v), ("W_O", w_o)):
        keys[name] = as_list(transpose(w))
    for name, b in (("b_Q", b_q), ("b_K", b_k), ("b_V", b_v), ("b_O", b_o)):
        keys[name] = as_list(b)
    return keys


def run_mha(mha, x, x_source, blocked=None, key_padding=None):
    """Run the module on one sequence or a batch; return per-sequence steps.

    Returns a list (one per sequence) of dicts holding q, k, v, weights
    (H, n, m), out (H, n, d_v), concat and final.  `weights` and `final` come
    from the module itself; q, k, v, out and concat are recomputed here and
    tied to the module's output by an assertion.
    """
    with torch.no_grad():
        final, weights = mha(x, x_source, x_source, attn_mask=blocked,
                             key_padding_mask=key_padding, need_weights=True,
                             average_attn_weights=False)
    batched = x.dim() == 3
    xs = x if batched else x.unsqueeze(0)
    srcs = x_source if batched else x_source.unsqueeze(0)
    weights = weights if batched else weights.unsqueeze(0)
    final = final if batched else final.unsqueeze(0)

    w_q, w_k, w_v, b_q, b_k, b_v = mha_projections(mha)
    w_o, b_o = mha.out_proj.weight.detach(), mha.out_proj.bias.detach()
    heads = mha.num_heads
    results = []
    for b in range(xs.shape[0]):
        q = xs[b] @ w_q.T + b_q
        k = srcs[b] @ w_k.T + b_k
        v = srcs[b] @ w_v.T + b_v
        out = weights[b] @ split_heads(v, heads)
        concat = join_heads(out)
        assert torch.allclose(concat @ w_o.T + b_o, final[b], rtol=0, atol=1e-12)
        results.append({"q": q, "k": k, "v": v, "weights": weights[b],
                        "out": out, "concat": concat, "final": final[b]})
    return results


def mha_problem(title, mha, x, x_source=None, causal=False, lengths=None,
                layout="torch", names=("q", "k", "v", "weights", "out", "concat", "final")):
    """A problem file for nn.MultiheadAttention, with its expect list."""
    n = x.shape[-2]
    m = n if x_source is None else x_source.shape[-2]
    blocked = ~causal_allowed(n, m) if causal else None
    key_padding = None
    if lengths is not None:
        key_padding = torch.arange(m).unsqueeze(0) >= torch.tensor(lengths).unsqueeze(1)
    results = run_mha(mha, x, x if x_source is None else x_source, blocked, key_padding)

    batched = x.dim() == 3
    expect = []
    for b, res in enumerate(results):
        batch = b if batched else None
        for name in names:
            if name in ("weights", "out"):
                expect += [step(name, res[name][h], head=h, batch=batch)
                           for h in range(mha.num_heads)]
            else:
                expect.append(step(name, res[name], batch=batch))

    problem = {"title": f"{title} ({TORCH}, float64)", "X": as_list(x)}
    if x_source is not None:
        problem["X_source"] = as_list(x_source)
    problem.update(mha_weight_keys(mha, layout))
    problem["heads"] = mha.num_heads
    if causal:
        problem["mask"] = "causal"
    if lengths is not None:
        problem["lengths"] = list(lengths)
    problem["expect"] = sort_steps(expect)
    return problem


def case_mha(causal=False, layout="torch"):
    """Cases 1, 2, 5: one sequence of 5 tokens, d_model 8, 2 heads."""
    mha = make_mha(8, 2, seed=1)
    x = randn(5, 8)
    mask = "causal mask" if causal else "no mask"
    title = f"golden: nn.MultiheadAttention(8, 2), {mask}, {layout} layout"
    return mha_problem(title, mha, x, causal=causal, layout=layout)


def case_mha_batch(causal=False):
    """Cases 3, 4: batch of 3 sequences of 7 tokens, lengths 7, 5, 3."""
    mha = make_mha(8, 2, seed=3)
    x = randn(3, 7, 8)
    mask = "causal + key padding" if causal else "key padding"
    title = f"golden: nn.MultiheadAttention(8, 2), batch of 3, {mask}"
    return mha_problem(title, mha, x, causal=causal, lengths=[7, 5, 3],
                       names=("weights", "final"))


def case_cross_attention():
    """Case 6: cross-attention, 4 queries (d 8) over 6 source tokens (d 6)."""
    mha = make_mha(8, 2, seed=6, kdim=6)
    x, x_source = randn(4, 8), randn(6, 6)
    title = "golden: nn.MultiheadAttention(8, 2, kdim=6, vdim=6), cross-attention"
    return mha_problem(title, mha, x, x_source=x_source,
                       names=("q", "k", "v", "weights", "final"))


# ---------------------------------------------------------------------------
# Cases where Q, K, V are given directly
# ---------------------------------------------------------------------------

def case_gqa(causal=False):
    """Cases 7, 8: 4 query heads sharing 2 KV heads (grouped-query attention)."""
    torch.manual_seed(7)
    heads, kv_heads, n, d = 4, 2, 5, 4
    q, k, v = randn(heads, n, d), randn(kv_heads, n, d), randn(kv_heads, n, d)
    group = heads // kv_heads
    k_rep = k.repeat_interleave(group, dim=0)
    v_rep = v.repeat_interleave(group, dim=0)
    allowed = causal_allowed(n, n) if causal else None
    head_steps = [attend(q[h], k_rep[h], v_rep[h], allowed) for h in range(heads)]

    # The same result through F.scaled_dot_product_attention on all heads at once.
    out = F.scaled_dot_product_attention(q, k_rep, v_rep, is_causal=causal)
    assert torch.allclose(out, torch.stack([s["out"] for s in head_steps]),
                          rtol=0, atol=1e-13)
    try:  # torch >= 2.5 can do the grouping itself
        gqa_out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
        assert torch.allclose(gqa_out, out, rtol=0, atol=1e-13)
    except TypeError:
        pass

    expect = per_head_entries(head_steps, ("weights", "out"))
    expect.append(step("concat", join_heads(out)))
    mask = "causal mask" if causal else "no mask"
    problem = {"title": f"golden: GQA 4 query heads / 2 KV heads, Q K V per head, "
                        f"{mask} ({TORCH} scaled_dot_product_attention, float64)",
               "Q": as_list(q), "K": as_list(k), "V": as_list(v),
               "heads": heads, "kv_heads": kv_heads}
    if causal:
        problem["mask"] = "causal"
    problem["expect"] = sort_steps(expect)
    return problem


def case_causal_n_ne_m(bottom_right=False):
    """Cases 9, 10: 3 queries, 6 keys; causal mask in either alignment."""
    torch.manual_seed(9)
    q, k, v = randn(3, 4), randn(6, 4), randn(6, 3)
    steps = attend(q, k, v, causal_allowed(3, 6, bottom_right))
    if not bottom_right:  # torch's own is_causal=True is top-left aligned
        out = F.scaled_dot_product_attention(q.unsqueeze(0), k.unsqueeze(0),
                                             v.unsqueeze(0), is_causal=True).squeeze(0)
        assert torch.allclose(out, steps["out"], rtol=0, atol=1e-13)
    mask = "causal-bottom-right" if bottom_right else "causal"
    alignment = "j <= i + (m - n)" if bottom_right else "j <= i, as torch is_causal=True"
    return {"title": f"golden: n=3 queries, m=6 keys, mask {mask} ({alignment}) "
                     f"({TORCH}, float64)",
            "Q": as_list(q), "K": as_list(k), "V": as_list(v), "mask": mask,
            "expect": [step("weights", steps["weights"]), step("out", steps["out"])]}


def rope_angles(rope, d_k):
    """Angle per unit position of each pair (radians)."""
    if "angles_deg" in rope:
        return np.radians(np.asarray(rope["angles_deg"], dtype=np.float64))
    i = np.arange(d_k // 2, dtype=np.float64)
    return float(rope["base"]) ** (-2.0 * i / d_k)


def apply_rope(x, positions, rope):
    """Rotate the pairs of every row of x (n, d_k) by position · angle_i.

    "interleaved" pairs columns (2i, 2i+1); "half" pairs (i, i + d_k/2).
    (x0, x1) -> (x0 cos − x1 sin, x0 sin + x1 cos).
    """
    x = np.asarray(x, dtype=np.float64)
    half = x.shape[1] // 2
    if rope.get("style", "interleaved") == "half":
        first, second = np.arange(half), np.arange(half) + half
    else:
        first, second = 2 * np.arange(half), 2 * np.arange(half) + 1
    angle = np.outer(np.asarray(positions, dtype=np.float64), rope_angles(rope, x.shape[1]))
    cos, sin = np.cos(angle), np.sin(angle)
    rotated = x.copy()
    rotated[:, first] = x[:, first] * cos - x[:, second] * sin
    rotated[:, second] = x[:, first] * sin + x[:, second] * cos
    return rotated


def case_rope(rope, label):
    """Case 11: self-attention with RoPE, 5 tokens, d_model 8, 2 heads of d_k 4."""
    torch.manual_seed(11)
    heads, n, d = 2, 5, 8
    x = randn(n, d)
    w = {name: randn(d, d, scale=1 / math.sqrt(d)) for name in ("W_Q", "W_K", "W_V")}
    b = {name: randn(d, scale=0.5) for name in ("b_Q", "b_K", "b_V")}
    q = x @ w["W_Q"] + b["b_Q"]
    k = x @ w["W_K"] + b["b_K"]
    v = x @ w["W_V"] + b["b_V"]

    positions = np.arange(n)
    head_steps = []
    for h, (q_h, k_h, v_h) in enumerate(zip(split_heads(q, heads), split_heads(k, heads),
                                             split_heads(v, heads))):
        q_rot = torch.from_numpy(apply_rope(q_h.numpy(), positions, rope))
        k_rot = torch.from_numpy(apply_rope(k_h.numpy(), positions, rope))
        steps = attend(q_rot, k_rot, v_h)
        steps.update(q_rot=q_rot, k_rot=k_rot)
        head_steps.append(steps)

    expect = [step("q", q), step("k", k), step("v", v)]
    expect += per_head_entries(head_steps, ("q_rot", "k_rot", "weights", "out"))
    expect.append(step("concat", join_heads(torch.stack([s["out"] for s in head_steps]))))
    problem = {"title": f"golden: RoPE {label}, 2 heads of d_k 4 ({TORCH}, float64)",
               "X": as_list(x)}
    problem.update({name: as_list(value) for name, value in {**w, **b}.items()})
    problem.update(heads=heads, rope=rope, expect=sort_steps(expect))
    return problem


def case_softcap():
    """Case 12: one head, logit soft-capping at c = 2 with a causal mask."""
    torch.manual_seed(12)
    q, k, v = randn(4, 4, scale=2.0), randn(4, 4, scale=2.0), randn(4, 4)
    steps = attend(q, k, v, causal_allowed(4, 4), softcap=2.0)
    return {"title": f"golden: softcap 2.0 then causal mask ({TORCH}, float64)",
            "Q": as_list(q), "K": as_list(k), "V": as_list(v),
            "mask": "causal", "softcap": 2.0,
            "expect": [step(name, steps[name]) for name in ("scaled", "capped", "weights", "out")]}


def case_alibi():
    """Case 13: 2 heads with ALiBi slopes 2^-4, 2^-8 and a causal mask."""
    torch.manual_seed(13)
    heads, n = 2, 5
    q, k, v = randn(n, 8), randn(n, 8), randn(n, 8)
    bias = alibi_bias(heads, n, n)
    head_steps = [attend(q_h, k_h, v_h, causal_allowed(n, n), bias=bias[h])
                  for h, (q_h, k_h, v_h) in enumerate(zip(
                      split_heads(q, heads), split_heads(k, heads), split_heads(v, heads)))]
    return {"title": f"golden: ALiBi, 2 heads, causal mask ({TORCH}, float64)",
            "Q": as_list(q), "K": as_list(k), "V": as_list(v),
            "heads": heads, "mask": "causal", "alibi": True,
            "expect": sort_steps(per_head_entries(head_steps, ("mask", "weights", "out")))}


def example_gqa_8q_2kv():
    """examples/gqa_8q_2kv.json: a readable GQA example, 8 query heads, 2 KV heads."""
    torch.manual_seed(2024)
    heads, kv_heads, n, d = 8, 2, 4, 2
    q, k, v = (torch.round(randn(*shape), decimals=1)
               for shape in ((heads, n, d), (kv_heads, n, d), (kv_heads, n, d)))
    group = heads // kv_heads
    k_rep = k.repeat_interleave(group, dim=0)
    v_rep = v.repeat_interleave(group, dim=0)
    head_steps = [attend(q[h], k_rep[h], v_rep[h]) for h in range(heads)]
    concat = join_heads(torch.stack([s["out"] for s in head_steps]))

    def rounded(t):  # 7 decimals: readable, and well inside atol 1e-6
        return torch.round(t, decimals=7)

    expect = [step("weights", rounded(head_steps[h]["weights"]), head=h, atol=1e-6)
              for h in (0, 3, 4, 7)]
    expect.append(step("concat", rounded(concat), atol=1e-6))
    return {"title": "Grouped-query attention: 8 query heads share 2 KV heads "
                     "(heads 0-3 read KV head 0, heads 4-7 read KV head 1)",
            "tokens": ["the", "cat", "sat", "down"],
            "Q": as_list(q), "K": as_list(k), "V": as_list(v),
            "heads": heads, "kv_heads": kv_heads, "expect": expect}


def rounded7(t):
    """7 decimals: readable, and well inside atol 1e-6."""
    return torch.round(t, decimals=7)


def example_sparse(spec, title, tokens, seed, extra_mask=None):
    """A readable sparse example: one head, Q, K, V of small integers; expect the
    mask, the reach (whole numbers and inf: check them by hand) and rounded weights."""
    torch.manual_seed(seed)
    n = len(tokens)
    q, k, v = (torch.randint(-2, 3, (n, 4)).to(torch.float64) for _ in range(3))
    allowed = sparse_allowed(spec, n, n)
    if extra_mask == "causal":
        allowed = allowed & causal_allowed(n, n)
    head = attend(q, k, v, allowed)
    problem = {"title": title, "tokens": tokens, "Q": as_list(q), "K": as_list(k), "V": as_list(v), "sparse": spec}
    problem["expect"] = [step("mask", head["mask"]), step("reach", reach_layers(allowed)),
                         step("weights", rounded7(head["weights"]), atol=1e-6), step("out", rounded7(head["out"]), atol=1e-6)]
    return problem


def example_mla():
    """examples/mla_small.json: MLA with query compression and decoupled RoPE, 2 heads."""
    problem = case_mla(compressed=True, rope_dims=2, seed=33)
    problem["title"] = ("MLA (DeepSeek-V2): 2 heads read keys and values from one latent c_kv of d_c = 4; "
                        "query compression d_cq = 6; decoupled RoPE d_r = 2 shared by the heads; causal")
    problem["tokens"] = ["the", "cache", "holds", "only", "latents"]
    keep = {"c_kv", "k_rope", "q_latent", "scores", "weights", "final"}
    problem["expect"] = [dict(e, atol=1e-6, data=as_list(rounded7(torch.tensor(np_matrix(e["data"])))))
                         for e in problem["expect"] if e["name"] in keep]
    return {k: problem[k] for k in ("title", "tokens", *[k for k in problem if k not in ("title", "tokens")])}


def example_dropout():
    """examples/dropout_train.json: one head, dropout p = 0.5 in train mode."""
    torch.manual_seed(41)
    n = 4
    q, k, v = (torch.randint(-2, 3, (n, 4)).to(torch.float64) for _ in range(3))
    keep = dropout_keep(3, 0.5, 1, n, n)[0]
    head = attend(q, k, v)
    dropped = head["weights"] * keep / 0.5
    return {"title": "Dropout p = 0.5 on the attention weights, train mode (run --eval to switch it off)",
            "tokens": ["drop", "half", "the", "weights"], "Q": as_list(q), "K": as_list(k), "V": as_list(v),
            "dropout": {"p": 0.5, "seed": 3, "mode": "train"},
            "expect": [step("weights", rounded7(head["weights"]), atol=1e-6), step("keep", keep),
                       step("dropped", rounded7(dropped), atol=1e-6), step("out", rounded7(dropped @ v), atol=1e-6)]}


def example_cross_attention():
    """examples/cross_attention.json: 3 queries read 4 source tokens (permute --source)."""
    torch.manual_seed(42)
    x, x_src = torch.randint(-1, 2, (3, 4)).to(torch.float64), torch.randint(-1, 2, (4, 4)).to(torch.float64)
    w = {name: torch.randint(-1, 2, (4, 2)).to(torch.float64) for name in ("W_Q", "W_K", "W_V")}
    head = attend(x @ w["W_Q"], x_src @ w["W_K"], x_src @ w["W_V"])
    return {"title": "Cross-attention: 3 target tokens read 4 source tokens",
            "tokens": ["le", "chat", "dort"], "source_tokens": ["the", "cat", "is", "sleeping"],
            "X": as_list(x), "X_source": as_list(x_src), **{k: as_list(m) for k, m in w.items()},
            "expect": [step("weights", rounded7(head["weights"]), atol=1e-6), step("out", rounded7(head["out"]), atol=1e-6)]}


# ---------------------------------------------------------------------------
# Independent numpy check of a written file
# ---------------------------------------------------------------------------

def np_matrix(value):
    """Nested lists from a file -> float64 array; "inf"/"-inf" strings -> ±inf."""
    def convert(x):
        return [convert(v) for v in x] if isinstance(x, list) else float(x)
    return np.asarray(convert(value), dtype=np.float64)


def np_weights(problem):
    """(W_Q, W_K, W_V, W_O, b_Q, b_K, b_V, b_O) in math layout, from the file."""
    weight_keys = {"W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O", "in_proj_weight",
                   "in_proj_bias", "out_proj.weight", "out_proj.bias"}
    get = {k: np.asarray(v, dtype=np.float64) for k, v in problem.items() if k in weight_keys}
    torch_layout = problem.get("weights_layout", "math") == "torch"
    if "in_proj_weight" in get:
        get["W_Q"], get["W_K"], get["W_V"] = np.split(get["in_proj_weight"], 3)
        get["b_Q"], get["b_K"], get["b_V"] = np.split(get["in_proj_bias"], 3)
        get["W_O"], get["b_O"] = get["out_proj.weight"], get["out_proj.bias"]
    weights = [get.get(name) for name in ("W_Q", "W_K", "W_V", "W_O")]
    if torch_layout:
        weights = [None if w is None else w.T for w in weights]
    biases = [get.get(name, 0.0) for name in ("b_Q", "b_K", "b_V", "b_O")]
    return weights, biases


def np_sequences(problem):
    """Yield (batch index or None, Q, K, V, key length) with heads side by side."""
    (w_q, w_k, w_v, _), (b_q, b_k, b_v, _) = np_weights(problem)
    if "X" in problem:
        x = np.asarray(problem["X"], dtype=np.float64)
        batched = x.ndim == 3
        xs = x if batched else x[None]
        srcs = np.asarray(problem["X_source"])[None] if "X_source" in problem else xs
        lengths = problem.get("lengths", [srcs.shape[1]] * xs.shape[0])
        for b in range(xs.shape[0]):
            src = srcs[b if srcs.shape[0] > 1 else 0]
            yield (b if batched else None, xs[b] @ w_q + b_q, src @ w_k + b_k,
                   src @ w_v + b_v, lengths[b])
    else:
        side_by_side = [np.asarray(problem[key], dtype=np.float64) for key in "QKV"]
        side_by_side = [np.concatenate(list(a), axis=1) if a.ndim == 3 else a
                        for a in side_by_side]
        yield (None, *side_by_side, side_by_side[1].shape[0])


def np_rotate(x, positions, rope):
    """RoPE through complex multiplication (a second formulation of apply_rope)."""
    half = x.shape[1] // 2
    if rope.get("style", "interleaved") == "half":
        pairs = x[:, :half] + 1j * x[:, half:]
    else:
        pairs = x[:, 0::2] + 1j * x[:, 1::2]
    if "angles_deg" in rope:
        theta = np.asarray(rope["angles_deg"]) * np.pi / 180
    else:
        theta = np.array([rope["base"] ** (-2 * i / x.shape[1]) for i in range(half)])
    pairs = pairs * np.exp(1j * np.outer(positions, theta))
    out = np.empty_like(x)
    if rope.get("style", "interleaved") == "half":
        out[:, :half], out[:, half:] = pairs.real, pairs.imag
    else:
        out[:, 0::2], out[:, 1::2] = pairs.real, pairs.imag
    return out


def np_trace(problem):
    """Every step of the problem, keyed by (name, head, batch), in numpy."""
    heads = problem.get("heads", 1)
    group = heads // problem.get("kv_heads", heads)
    masks = problem.get("mask", [])
    masks = masks if isinstance(masks, list) else [masks]
    (_, _, _, w_o), (_, _, _, b_o) = np_weights(problem)
    trace = {}
    for batch, q, k, v, length in np_sequences(problem):
        n, m = q.shape[0], k.shape[0]
        trace.update({("q", None, batch): q, ("k", None, batch): k, ("v", None, batch): v})
        d_k, d_v = q.shape[1] // heads, v.shape[1] // (heads // group)
        i, j = np.arange(n)[:, None], np.arange(m)[None, :]
        allowed = np.broadcast_to(j < length, (n, m))
        for spec in masks:
            offset = (m - n) if spec == "causal-bottom-right" else 0
            assert spec in ("causal", "causal-bottom-right"), spec
            allowed = allowed & (j <= i + offset)
        outs = []
        for h in range(heads):
            kv = h // group
            q_h, k_h = q[:, h * d_k:(h + 1) * d_k], k[:, kv * d_k:(kv + 1) * d_k]
            v_h = v[:, kv * d_v:(kv + 1) * d_v]
            if "rope" in problem:
                q_h = np_rotate(q_h, np.arange(n), problem["rope"])
                k_h = np_rotate(k_h, np.arange(m), problem["rope"])
            z = (q_h @ k_h.T) / np.sqrt(d_k)
            steps = {"q_rot": q_h, "k_rot": k_h, "scaled": z}
            if "softcap" in problem:
                c = problem["softcap"]
                z = steps["capped"] = c * np.tanh(z / c)
            mask = np.where(allowed, 0.0, -np.inf)
            if problem.get("alibi"):
                mask = mask - 2.0 ** (-8 * (h + 1) / heads) * np.abs(i + (m - n) - j)
            e = np.exp(z + mask - np.max(z + mask, axis=1, keepdims=True))
            steps["mask"], steps["weights"] = mask, e / e.sum(axis=1, keepdims=True)
            steps["out"] = steps["weights"] @ v_h
            steps["allowed"] = allowed
            outs.append(steps["out"])
            trace.update({(name, h, batch): value for name, value in steps.items()})
        trace[("concat", None, batch)] = np.concatenate(outs, axis=1)
        if w_o is not None:
            trace[("final", None, batch)] = trace[("concat", None, batch)] @ w_o + b_o
    return trace


# ---------------------------------------------------------------------------
# The rest of the family: sparse patterns, MLA, dropout
# (docs/FAMILY.md#the-rest-of-the-attention-family)
# ---------------------------------------------------------------------------

M64 = (1 << 64) - 1


class PortableRandom:
    """attn-trace's generator (src/core/random.cpp): xoshiro256** seeded by splitmix64."""

    def __init__(self, seed):
        self.state = []
        x = seed & M64
        for _ in range(4):
            x = (x + 0x9E3779B97F4A7C15) & M64
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
            self.state.append(z ^ (z >> 31))

    def next_u64(self):
        s = self.state
        rotl = lambda v, k: ((v << k) | (v >> (64 - k))) & M64
        result = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    def uniform(self):
        return (self.next_u64() >> 11) * 2.0 ** -53


def sparse_blocks(spec, n, m):
    """The block-level pattern of a `sparse` spec as a boolean (query blocks, key
    blocks) tensor, with the random blocks drawn as
    docs/FAMILY.md#sparse-patterns-which-pairs-are-scored-at-all says: per query
    block in order, per_row of the key blocks its window and global parts leave unseen (with causal:
    that hold a key it may read), by a partial Fisher-Yates shuffle in ascending order."""
    b = spec.get("block", 1)
    qb, kb = -(-n // b), -(-m // b)
    offset = kb - qb
    I = torch.arange(qb).unsqueeze(1)
    J = torch.arange(kb).unsqueeze(0)
    seen = torch.zeros(qb, kb, dtype=torch.bool)
    if "window" in spec:
        w = spec["window"]
        left, right = (w.get("left", 0), w.get("right", 0)) if isinstance(w, dict) else (w - 1, 0)
        seen |= (I + offset - left <= J) & (J <= I + offset + right)
    for g in spec.get("global", []):
        if g < qb:
            seen[g, :] = True
        if g < kb:
            seen[:, g] = True
    if "random" in spec:
        rng = PortableRandom(spec["random"].get("seed", 0))
        drawn = torch.zeros(qb, kb, dtype=torch.bool)
        for i in range(qb):
            last_query = min(n, (i + 1) * b) - 1
            candidates = [j for j in range(kb) if not seen[i, j]
                          and (not spec.get("causal") or j * b <= last_query + m - n)]
            take = min(spec["random"]["per_row"], len(candidates))
            for t in range(take):
                pick = t + int(rng.uniform() * (len(candidates) - t))
                candidates[t], candidates[pick] = candidates[pick], candidates[t]
            for j in candidates[:take]:
                drawn[i, j] = True
        seen |= drawn
    return seen


def sparse_allowed(spec, n, m):
    """Boolean (n, m): the blocks expanded to tokens, then the causal rule."""
    b = spec.get("block", 1)
    allowed = sparse_blocks(spec, n, m).repeat_interleave(b, 0).repeat_interleave(b, 1)[:n, :m]
    if spec.get("causal"):
        allowed = allowed & causal_allowed(n, m, bottom_right=True)
    return allowed


def reach_layers(allowed):
    """Least L >= 1 with key j's information at query i after L layers: boolean matrix
    powers of (reads | itself); inf where no power reaches."""
    n = allowed.shape[0]
    step_ = (allowed | torch.eye(n, dtype=torch.bool)).to(torch.float64)
    reached = torch.eye(n, dtype=torch.bool) | allowed
    reach = torch.full((n, n), math.inf)
    reach[reached] = 1.0
    for layers in range(2, n + 1):
        reached_next = (reached.to(torch.float64) @ step_) > 0
        reach[reached_next & ~reached] = float(layers)
        if torch.equal(reached_next, reached):
            break
        reached = reached_next
    return reach


def case_sparse(spec, label, extra_mask=None, seed=20, n=12, heads=2, m=None):
    """Sparse pattern as an explicit boolean mask into F.scaled_dot_product_attention."""
    torch.manual_seed(seed)
    d, m = 4, m or n
    q, k, v = randn(n, heads * d), randn(m, heads * d), randn(m, heads * d)
    allowed = sparse_allowed(spec, n, m)
    if extra_mask == "causal":
        allowed = allowed & causal_allowed(n, m)
    head_steps = [attend(q_h, k_h, v_h, allowed) for q_h, k_h, v_h in
                  zip(split_heads(q, heads), split_heads(k, heads), split_heads(v, heads))]
    problem = {"title": f"golden: {label} ({TORCH}, float64)",
               "Q": as_list(q), "K": as_list(k), "V": as_list(v), "heads": heads, "sparse": spec}
    if extra_mask:
        problem["mask"] = extra_mask
    expect = per_head_entries(head_steps, ("mask", "weights", "out"))
    if n == m:  # reach is self-attention's
        expect.append(step("reach", reach_layers(allowed)))
    problem["expect"] = sort_steps(expect)
    return problem


def rope_rows(x, positions, rope):
    return torch.from_numpy(apply_rope(x.numpy(), positions, rope))


def case_mla(compressed=True, rope_dims=2, seed=30):
    """DeepSeek-V2's equations transcribed: c_kv = X W_DKV, k = c_kv W_UK, v = c_kv W_UV,
    (c_q = X W_DQ, q = c_q W_UQ), q_rope = RoPE(c_q W_QR), k_rope = RoPE(X W_KR) shared
    by the heads; head h's scores [q_h, q_rope_h]·[k_h, k_rope]. The absorbed form
    (q_h W_UK,hᵀ) c_kvᵀ + q_rope_h k_ropeᵀ is checked against them."""
    torch.manual_seed(seed)
    n, d_model, heads, d_c, d_cq, d_h = 5, 8, 2, 4, 6, 4
    x = randn(n, d_model)
    w = {"W_DKV": randn(d_model, d_c, scale=1 / math.sqrt(d_model)),
         "W_UK": randn(d_c, heads * d_h, scale=1 / math.sqrt(d_c)),
         "W_UV": randn(d_c, heads * d_h, scale=1 / math.sqrt(d_c))}
    if compressed:
        w["W_DQ"] = randn(d_model, d_cq, scale=1 / math.sqrt(d_model))
        w["W_UQ"] = randn(d_cq, heads * d_h, scale=1 / math.sqrt(d_cq))
    else:
        w_q = randn(d_model, heads * d_h, scale=1 / math.sqrt(d_model))
    if rope_dims:
        w["W_QR"] = randn(d_cq if compressed else d_model, heads * rope_dims, scale=0.5)
        w["W_KR"] = randn(d_model, rope_dims, scale=0.5)
    w_o = randn(heads * d_h, d_model, scale=1 / math.sqrt(heads * d_h))
    rope = {"base": 10000, "style": "interleaved"}
    positions = np.arange(n)

    c_kv = x @ w["W_DKV"]
    k, v = c_kv @ w["W_UK"], c_kv @ w["W_UV"]
    c_q = x @ w["W_DQ"] if compressed else None
    q = c_q @ w["W_UQ"] if compressed else x @ w_q
    steps = {"c_kv": c_kv, "q": q, "k": k, "v": v}
    if compressed:
        steps["c_q"] = c_q
    if rope_dims:
        q_rope_raw = (c_q if compressed else x) @ w["W_QR"]
        q_rope = torch.cat([rope_rows(part, positions, rope) for part in split_heads(q_rope_raw, heads)], dim=1)
        k_rope = rope_rows(x @ w["W_KR"], positions, rope)
        steps.update(q_rope=q_rope, k_rope=k_rope)
    scale = 1 / math.sqrt(d_h + rope_dims)
    allowed = causal_allowed(n, n)
    head_steps = []
    for h in range(heads):
        q_h, k_h, v_h = q[:, h * d_h:(h + 1) * d_h], k[:, h * d_h:(h + 1) * d_h], v[:, h * d_h:(h + 1) * d_h]
        if rope_dims:
            q_full = torch.cat([q_h, q_rope[:, h * rope_dims:(h + 1) * rope_dims]], dim=1)
            k_full = torch.cat([k_h, k_rope], dim=1)
        else:
            q_full, k_full = q_h, k_h
        head = attend(q_full, k_full, v_h, allowed, scale=scale)
        q_latent = q_h @ w["W_UK"][:, h * d_h:(h + 1) * d_h].T
        absorbed = q_latent @ c_kv.T
        if rope_dims:
            absorbed = absorbed + q_rope[:, h * rope_dims:(h + 1) * rope_dims] @ k_rope.T
        assert torch.allclose(absorbed, head["scores"], rtol=0, atol=1e-12), "absorbed form differs"
        head["q_latent"] = q_latent
        head_steps.append(head)
    concat = join_heads(torch.stack([hs["out"] for hs in head_steps]))
    mla = {name: as_list(value) for name, value in w.items()}
    if rope_dims:
        mla["rope_dims"] = rope_dims
    problem = {"title": f"golden: MLA {'with' if compressed else 'without'} query compression, "
                        f"{'decoupled RoPE d_r ' + str(rope_dims) if rope_dims else 'no RoPE'}, "
                        f"2 heads, causal ({TORCH}, float64)",
               "X": as_list(x), "heads": heads, "mla": mla}
    if not compressed:
        problem["W_Q"] = as_list(w_q)
    problem["W_O"] = as_list(w_o)
    if rope_dims:
        problem["rope"] = rope
    problem["mask"] = "causal"
    expect = [step(name, value) for name, value in steps.items()]
    expect += per_head_entries(head_steps, ("q_latent", "scores", "weights", "out"))
    expect += [step("concat", concat), step("final", concat @ w_o)]
    problem["expect"] = sort_steps(expect)
    return problem


def dropout_keep(seed, p, heads, n, m):
    """keep (H, n, m): one stream over the heads in order, row-major, 1 where u >= p."""
    rng = PortableRandom(seed)
    keep = torch.zeros(heads, n, m)
    for h in range(heads):
        for i in range(n):
            for j in range(m):
                keep[h, i, j] = 1.0 if rng.uniform() >= p else 0.0
    return keep


def case_dropout():
    """Dropout in train mode, its keep given to torch as the mask: dropped = A ⊙ keep / (1 − p)."""
    torch.manual_seed(40)
    heads, n, d, p = 2, 6, 4, 0.25
    q, k, v = randn(n, heads * d), randn(n, heads * d), randn(n, heads * d)
    keep = dropout_keep(5, p, heads, n, n)
    allowed = causal_allowed(n, n)
    head_steps = []
    for h, (q_h, k_h, v_h) in enumerate(zip(split_heads(q, heads), split_heads(k, heads), split_heads(v, heads))):
        steps = attend(q_h, k_h, v_h, allowed)
        steps["keep"] = keep[h]
        steps["dropped"] = steps["weights"] * keep[h] / (1 - p)
        steps["out"] = steps["dropped"] @ v_h
        head_steps.append(steps)
    return {"title": f"golden: dropout p = 0.25 in train mode, keep as torch's mask, causal ({TORCH}, float64)",
            "Q": as_list(q), "K": as_list(k), "V": as_list(v), "heads": heads, "mask": "causal",
            "dropout": {"p": p, "seed": 5, "mode": "train"},
            "expect": sort_steps(per_head_entries(head_steps, ("weights", "keep", "dropped", "out")))}


# ---------------------------------------------------------------------------
# The backward pass (docs/COMMANDS.md#grad): torch.autograd in float64
# ---------------------------------------------------------------------------

def autograd_attention(q, k, v, heads, kv_heads, allowed, scale, d_out, softcap=None, bias=None,
                       rope=None, keep=None, p=0.0, w_o=None, b_o=None, zero_empty=False, nan_empty=False):
    """One sequence forward in torch with every intermediate kept for its gradient.
    q (n, H·d_k), k (m, H_kv·d_k), v (m, H_kv·d_v) are leaves or results; returns the
    per-head intermediates (each with retain_grad) and the output; calls backward."""
    n, m = q.shape[0], k.shape[0]
    d_k, d_v = q.shape[1] // heads, v.shape[1] // kv_heads
    group = heads // kv_heads
    kept = {}
    outs = []
    for h in range(heads):
        g = h // group
        q_h, k_h, v_h = q[:, h * d_k:(h + 1) * d_k], k[:, g * d_k:(g + 1) * d_k], v[:, g * d_v:(g + 1) * d_v]
        if rope is not None:
            q_h = rope_torch(q_h, torch.arange(n, dtype=torch.float64) + (m - n if m > n else 0), rope)
            k_h = rope_torch(k_h, torch.arange(m, dtype=torch.float64), rope)
            q_h.retain_grad(); k_h.retain_grad()
            kept[("q_rot", h)], kept[("k_rot", h)] = q_h, k_h
        scores = q_h @ k_h.T
        scaled = scores * scale
        logits = softcap * torch.tanh(scaled / softcap) if softcap else scaled
        mask = torch.zeros(n, m) + (bias[h] if bias is not None else 0)
        mask = mask.masked_fill(~allowed, -math.inf)
        z = logits + mask
        empty = ~allowed.any(dim=1, keepdim=True)
        # nan policy: softmax of a row of −∞ is what torch gives, NaN (and NaN flows back)
        weights = torch.softmax(z if nan_empty else torch.where(empty, torch.zeros_like(z), z), dim=-1)
        if zero_empty:
            weights = torch.where(empty, torch.zeros_like(weights), weights)
        mixed = weights * keep[h] / (1 - p) if keep is not None else weights
        out = mixed @ v_h
        for name, t in (("scores", scores), ("scaled", scaled), ("capped", logits), ("masked", z), ("weights", weights),
                        ("dropped", mixed), ("out", out)):
            t.retain_grad()
            kept[(name, h)] = t
        outs.append(out)
    concat = torch.cat(outs, dim=1)
    concat.retain_grad()
    output = concat @ w_o + (b_o if b_o is not None else 0) if w_o is not None else concat
    (output * d_out).sum().backward()
    return kept, concat


def rope_torch(x, positions, rope):
    """RoPE in torch (interleaved pairs, base or angles), differentiable."""
    half = x.shape[1] // 2
    if "angles_deg" in rope:
        theta = torch.tensor(rope["angles_deg"]) * math.pi / 180
    else:
        theta = rope.get("base", 10000.0) ** (-2.0 * torch.arange(half, dtype=torch.float64) / x.shape[1])
    angle = positions.unsqueeze(1) * theta.unsqueeze(0)
    cos, sin = torch.cos(angle), torch.sin(angle)
    a, b = x[:, 0::2], x[:, 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=2).reshape(x.shape)


def grad_entries(kept, heads, names, batch=None):
    out = []
    for h in range(heads):
        for name, source in names:
            out.append(step(name, kept[(source, h)].grad, head=h, batch=batch))
    return out


def case_grad_direct(title, seed, n=4, m=4, heads=1, kv_heads=None, mask=None, softcap=None, alibi=False,
                     dropout=None, empty_rows=None, key_valid=None, window=None, additive=False, blocked=None):
    """Q, K, V given: their gradients, and the per-head intermediates, from autograd."""
    torch.manual_seed(seed)
    kv_heads = kv_heads or heads
    d = 4
    q = randn(n, heads * d).requires_grad_()
    k = randn(m, kv_heads * d).requires_grad_()
    v = randn(m, kv_heads * d).requires_grad_()
    d_out = randn(n, heads * d)
    allowed = torch.ones(n, m, dtype=torch.bool)
    if mask == "causal":
        allowed &= causal_allowed(n, m)
    if key_valid is not None:
        allowed &= torch.tensor(key_valid, dtype=torch.bool).unsqueeze(0)
    if window is not None:  # {"left": a, "right": c}, bottom-right aligned
        i, j = torch.arange(n).unsqueeze(1) + (m - n), torch.arange(m).unsqueeze(0)
        allowed &= (i - window["left"] <= j) & (j <= i + window["right"])
    if blocked is not None:
        allowed &= ~torch.tensor(blocked, dtype=torch.bool)
    bias = alibi_bias(heads, n, m) if alibi else None
    extra = torch.round(randn(n, m), decimals=2) if additive else None
    if extra is not None:
        bias = extra.unsqueeze(0).expand(heads, n, m) if bias is None else bias + extra
    keep = dropout_keep(dropout["seed"], dropout["p"], heads, n, m) if dropout else None
    kept, _ = autograd_attention(q, k, v, heads, kv_heads, allowed, 1 / math.sqrt(d), d_out, softcap=softcap, bias=bias,
                                 keep=keep, p=dropout["p"] if dropout else 0.0, zero_empty=empty_rows == "zero",
                                 nan_empty=empty_rows == "nan")
    problem = {"title": f"golden (grad): {title} ({TORCH} autograd, float64)",
               "Q": as_list(q), "K": as_list(k), "V": as_list(v), "heads": heads}
    if kv_heads != heads:
        problem["kv_heads"] = kv_heads
    masks = ([mask] if mask else []) + ([{"key_valid": [bool(x) for x in key_valid]}] if key_valid is not None else [])
    if window is not None:
        masks.append({"window": window})
    if extra is not None:
        masks.append({"additive": as_list(extra)})
    if blocked is not None:
        masks.append({"blocked": blocked})
    if masks:
        problem["mask"] = masks if len(masks) > 1 else masks[0]
    if softcap:
        problem["softcap"] = softcap
    if alibi:
        problem["alibi"] = True
    if dropout:
        problem["dropout"] = dict(dropout, mode="train")
    if empty_rows:
        problem["empty_rows"] = empty_rows
    problem["d_out"] = as_list(d_out)
    names = [("grad_weights", "weights"), ("grad_masked", "masked"), ("grad_scaled", "scaled"), ("grad_scores", "scores")]
    if softcap:
        names.append(("grad_capped", "capped"))
    if dropout:
        names.append(("grad_dropped", "dropped"))
    nan = empty_rows == "nan"
    expect = [step(name, kept[(source, h)].grad, head=h, allow_nan=nan) for h in range(heads) for name, source in names]
    d_k = d
    for h in range(heads):
        expect.append(step("grad_q", q.grad[:, h * d_k:(h + 1) * d_k], head=h, allow_nan=nan))
    for g in range(kv_heads):
        expect.append(step("grad_k", k.grad[:, g * d:(g + 1) * d], head=g, allow_nan=nan))
        expect.append(step("grad_v", v.grad[:, g * d:(g + 1) * d], head=g, allow_nan=nan))
    problem["expect"] = expect
    return problem


def case_grad_jacobian(row=1, seed=70):
    """grad --row: the softmax Jacobian of one row, d weights_i / d masked_i, from
    torch.autograd.functional.jacobian of the softmax at that row (causal, 2 heads)."""
    problem = case_grad_direct("the softmax Jacobian of row 1, causal, 2 heads", seed, heads=2, mask="causal")
    q, k = np_matrix(problem["Q"]), np_matrix(problem["K"])
    n, m, d = q.shape[0], k.shape[0], q.shape[1] // 2
    allowed = causal_allowed(n, m)
    for h in range(2):
        s = torch.tensor(q[:, h * d:(h + 1) * d] @ k[:, h * d:(h + 1) * d].T) / math.sqrt(d)
        z = s.masked_fill(~allowed, -math.inf)[row]
        jacobian = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, dim=-1), z)
        problem["expect"].append(step("jacobian", jacobian, head=h, row=row))
    return problem


def case_grad_tiled(seed=71, n=4, m=4, block=2):
    """grad --tiled at check's 2 × 2 tiles (causal, one head): lse = logsumexp of each
    masked row, delta = rowsum(grad_out ⊙ out), and per tile that is not wholly blocked
    p (the weights' block), grad_p (grad_out Vᵀ's block) and grad_s (grad_masked's block)."""
    problem = case_grad_direct("FlashAttention-2's backward in 2 × 2 tiles, causal", seed, n=n, m=m, mask="causal")
    q, k, v, d_out = (torch.tensor(np_matrix(problem[key])) for key in ("Q", "K", "V", "d_out"))
    allowed = causal_allowed(n, m)
    z = (q @ k.T / math.sqrt(q.shape[1])).masked_fill(~allowed, -math.inf).requires_grad_()
    weights = torch.softmax(z, dim=-1)
    out = weights @ v
    (out * d_out).sum().backward()
    grad_p = d_out @ v.T
    expect = [e for e in problem["expect"] if e["name"] in ("grad_q", "grad_k", "grad_v")]
    expect += [step("lse", torch.logsumexp(z, dim=-1, keepdim=True), head=0),
               step("delta", (d_out * out).sum(dim=-1, keepdim=True), head=0)]
    for qb in range(0, n, block):
        for kt in range(0, m, block):
            if not allowed[qb:qb + block, kt:kt + block].any():
                continue  # a wholly blocked tile is skipped, not recorded
            tile = (qb // block, kt // block)
            for name, value in (("p", weights), ("grad_p", grad_p), ("grad_s", z.grad)):
                expect.append(step(name, value[qb:qb + block, kt:kt + block], head=0, tile=tile))
    problem["expect"] = expect
    return problem


def case_grad_projected(title, seed, heads=2, causal=False, cross=False, rope=None, batch_lengths=None):
    """X with W_Q, W_K, W_V (biases), W_O and b_O: every weight, bias and input gradient."""
    torch.manual_seed(seed)
    n, d = 5, 8
    batch = len(batch_lengths) if batch_lengths else 1
    xs = randn(batch, n, d).requires_grad_()
    srcs = randn(batch, 6, d).requires_grad_() if cross else None
    w = {name: randn(d, d, scale=1 / math.sqrt(d)).requires_grad_() for name in ("W_Q", "W_K", "W_V", "W_O")}
    b = {name: randn(d, scale=0.5).requires_grad_() for name in ("b_Q", "b_K", "b_V", "b_O")}
    d_outs = randn(batch, n, d)
    for i in range(batch):
        x = xs[i]
        src = srcs[i] if cross else x
        m = src.shape[0]
        q = x @ w["W_Q"] + b["b_Q"]
        k = src @ w["W_K"] + b["b_K"]
        v = src @ w["W_V"] + b["b_V"]
        allowed = torch.ones(n, m, dtype=torch.bool)
        if causal:
            allowed &= causal_allowed(n, m)
        if batch_lengths:
            allowed &= (torch.arange(m) < batch_lengths[i]).unsqueeze(0)
        autograd_attention(q, k, v, heads, heads, allowed, 1 / math.sqrt(d // heads), d_outs[i], rope=rope,
                           w_o=w["W_O"], b_o=b["b_O"])
    problem = {"title": f"golden (grad): {title} ({TORCH} autograd, float64)",
               "X": as_list(xs if batch_lengths else xs[0])}
    if cross:
        problem["X_source"] = as_list(srcs[0])
    problem.update({name: as_list(t) for name, t in {**w, **b}.items()})
    problem["heads"] = heads
    if causal:
        problem["mask"] = "causal"
    if rope:
        problem["rope"] = rope
    if batch_lengths:
        problem["lengths"] = batch_lengths
    problem["d_out"] = as_list(d_outs if batch_lengths else d_outs[0])
    expect = [step(f"grad_{name}", t.grad) for name, t in w.items()] + [step(f"grad_{name}", t.grad.unsqueeze(0)) for name, t in b.items()]
    for i in range(batch):
        bi = i if batch_lengths else None
        expect.append(step("grad_x", xs.grad[i], batch=bi))
        if cross:
            expect.append(step("grad_x_source", srcs.grad[i], batch=bi))
    problem["expect"] = expect
    return problem


def np_family_trace(problem):
    """A second, numpy formulation of the family's files (sparse, MLA, dropout):
    pair-by-pair visibility, breadth-first reach, MLA from the file's matrices."""
    heads = problem.get("heads", 1)
    trace = {}
    if "mla" in problem:
        mla = {k: (np.asarray(v, dtype=np.float64) if k != "rope_dims" else v) for k, v in problem["mla"].items()}
        x = np.asarray(problem["X"], dtype=np.float64)
        n = m = x.shape[0]
        c_kv = x @ mla["W_DKV"]
        k, v = c_kv @ mla["W_UK"], c_kv @ mla["W_UV"]
        c_q = x @ mla["W_DQ"] if "W_DQ" in mla else None
        q = c_q @ mla["W_UQ"] if c_q is not None else x @ np.asarray(problem["W_Q"])
        d_r = mla.get("rope_dims", 0)
        trace.update({("c_kv", None, None): c_kv, ("q", None, None): q, ("k", None, None): k, ("v", None, None): v})
        if c_q is not None:
            trace[("c_q", None, None)] = c_q
        if d_r:
            raw = (c_q if c_q is not None else x) @ mla["W_QR"]
            q_rope = np.concatenate([np_rotate(raw[:, h * d_r:(h + 1) * d_r], np.arange(n), problem["rope"])
                                     for h in range(heads)], axis=1)
            k_rope = np_rotate(x @ mla["W_KR"], np.arange(m), problem["rope"])
            trace.update({("q_rope", None, None): q_rope, ("k_rope", None, None): k_rope})
        d_h = k.shape[1] // heads
    else:
        q, k, v = (np.asarray(problem[key], dtype=np.float64) for key in "QKV")
        n, m = q.shape[0], k.shape[0]
        d_h = q.shape[1] // heads
        d_r = 0
    allowed = np.ones((n, m), dtype=bool)
    if problem.get("mask") == "causal":
        allowed &= np.arange(m)[None, :] <= np.arange(n)[:, None]
    if "sparse" in problem:
        spec = problem["sparse"]
        b = spec.get("block", 1)
        blocks = sparse_blocks(spec, n, m).numpy()
        pair = np.array([[bool(blocks[i // b, j // b]) and (not spec.get("causal") or j <= i + m - n)
                          for j in range(m)] for i in range(n)])
        allowed &= pair
    if "sparse" in problem and n == m:  # reach is self-attention's
        reach = np.full((n, n), np.inf)
        for i in range(n):  # breadth-first from i over "i reads j"
            reach[i, i], frontier, layers = 1, [i], 1
            while frontier:
                nxt = []
                for u in frontier:
                    for j in np.nonzero(allowed[u])[0]:
                        if np.isinf(reach[i, j]):
                            reach[i, j] = layers
                            nxt.append(j)
                frontier, layers = nxt, layers + 1
        trace[("reach", None, None)] = reach
    mask = np.where(allowed, 0.0, -np.inf)
    outs = []
    for h in range(heads):
        q_h, k_h, v_h = q[:, h * d_h:(h + 1) * d_h], k[:, h * d_h:(h + 1) * d_h], v[:, h * d_h:(h + 1) * d_h]
        scores = q_h @ k_h.T
        if "mla" in problem:
            trace[("q_latent", h, None)] = q_h @ mla["W_UK"][:, h * d_h:(h + 1) * d_h].T
            if d_r:
                scores = scores + q_rope[:, h * d_r:(h + 1) * d_r] @ k_rope.T
        z = scores / np.sqrt(d_h + d_r) + mask
        e = np.exp(z - z.max(axis=1, keepdims=True))
        weights = e / e.sum(axis=1, keepdims=True)
        steps = {"scores": scores, "mask": mask, "weights": weights, "allowed": allowed}
        mixed = weights
        if problem.get("dropout", {}).get("mode") == "train":
            p = problem["dropout"]["p"]
            keep = dropout_keep(problem["dropout"]["seed"], p, heads, n, m)[h].numpy()
            steps["keep"], steps["dropped"] = keep, weights * keep / (1 - p)
            mixed = steps["dropped"]
        steps["out"] = mixed @ v_h
        outs.append(steps["out"])
        trace.update({(name, h, None): value for name, value in steps.items()})
    trace[("concat", None, None)] = np.concatenate(outs, axis=1)
    if "W_O" in problem:
        trace[("final", None, None)] = trace[("concat", None, None)] @ np.asarray(problem["W_O"])
    return trace


def np_check_gradients(problem):
    """Invariants of a gradient file (the values themselves are torch.autograd's; the
    C++ tests check them again by finite differences): every value finite, and each
    row of grad_masked sums to 0 (Σ_j a_j (g_j − Σ_k g_k a_k) = 0), with exact zeros
    where the forward weights are 0."""
    for entry in problem["expect"]:
        data = np_matrix(entry["data"])
        if problem.get("empty_rows") == "nan":  # NaN where the empty row reaches, finite elsewhere
            assert np.any(np.isnan(data)) or entry["name"] in ("grad_weights",), f"{entry['name']}: the empty row's NaN is missing"
            continue
        assert np.all(np.isfinite(data)), f"{entry['name']}: non-finite gradient"
        if entry["name"] == "grad_masked":
            assert np.allclose(data.sum(axis=1), 0.0, atol=1e-12), "grad_masked rows must sum to 0"
    return len(problem["expect"])


def verify_file(path):
    """Re-load a written file and check it against the numpy trace."""
    assert path.stat().st_size < MAX_FILE_BYTES, f"{path} is too large"
    problem = json.loads(path.read_text())
    unknown = set(problem) - PROBLEM_KEYS
    assert not unknown, f"{path}: unknown keys {unknown}"
    if "d_out" in problem:  # gradients: checked by finite differences instead (np_check_gradients)
        return np_check_gradients(problem)
    family = any(key in problem for key in ("sparse", "dropout", "mla"))
    trace = np_family_trace(problem) if family else np_trace(problem)
    heads = problem.get("heads", 1)
    shared = ("c_kv", "c_q", "q", "k", "v", "q_rope", "k_rope", "reach", "concat", "final")
    for entry in problem["expect"]:
        per_head = entry["name"] not in shared
        head = entry.get("head", 0 if heads == 1 else None) if per_head else None
        where = f"{path.name}: {entry['name']} head={head} batch={entry.get('batch')}"
        want = np_matrix(entry["data"])
        got = trace[(entry["name"], head, entry.get("batch"))]
        assert want.shape == got.shape, f"{where}: shape {want.shape} vs {got.shape}"
        finite = np.isfinite(want)
        assert np.array_equal(finite, np.isfinite(got)) and np.array_equal(
            want[~finite], got[~finite]), f"{where}: infinities differ"
        diff = np.max(np.abs(want[finite] - got[finite]), initial=0.0)
        assert diff <= entry["atol"], f"{where}: differs by {diff}"
        if entry["name"] in ("weights", "dropped"):  # blocked cells exactly 0
            allowed = trace[("allowed", head, entry.get("batch"))]
            assert np.all(want[~allowed] == 0.0), f"{where}: blocked weight not 0"
        if entry["name"] == "keep":
            assert np.all((want == 0.0) | (want == 1.0)), f"{where}: keep is not 0/1"
        if entry["name"] == "weights":  # rows sum to 1, blocked cells exactly 0
            allowed = trace[("allowed", head, entry.get("batch"))]
            assert np.all(want[~allowed] == 0.0), f"{where}: blocked weight not 0"
            assert np.allclose(want.sum(axis=1), 1.0, rtol=0, atol=10 * entry["atol"]), where
    return len(problem["expect"])


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------

def to_json(value, indent=0):
    """JSON with one matrix row per line (json.dumps floats round-trip exactly)."""
    pad = "  " * indent
    if isinstance(value, dict):
        items = [f"{pad}  {json.dumps(k)}: {to_json(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list) and value and isinstance(value[0], (list, dict)):
        items = [pad + "  " + to_json(v, indent + 1) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(value, allow_nan=False)


GOLDEN_CASES = {
    "mha_nomask.json": lambda: case_mha(),
    "mha_causal.json": lambda: case_mha(causal=True),
    "mha_batch_padding.json": lambda: case_mha_batch(),
    "mha_batch_causal_padding.json": lambda: case_mha_batch(causal=True),
    "mha_math_layout.json": lambda: case_mha(layout="math"),
    "cross_attention_kdim.json": case_cross_attention,
    "gqa_sdpa.json": lambda: case_gqa(),
    "gqa_sdpa_causal.json": lambda: case_gqa(causal=True),
    "causal_n_ne_m.json": lambda: case_causal_n_ne_m(),
    "causal_bottom_right.json": lambda: case_causal_n_ne_m(bottom_right=True),
    "rope_interleaved.json": lambda: case_rope({"base": 10000, "style": "interleaved"},
                                               "base 10000, interleaved pairs"),
    "rope_half.json": lambda: case_rope({"base": 10000, "style": "half"},
                                        "base 10000, half-split pairs"),
    "rope_angles.json": lambda: case_rope({"angles_deg": [30, 45]},
                                          "angles 30 and 45 degrees per position"),
    "softcap.json": case_softcap,
    "alibi.json": case_alibi,
    "sparse_longformer.json": lambda: case_sparse({"window": {"left": 1, "right": 1}, "global": [0]},
                                                  "Longformer-style sparse pattern: window 1 each side, global token 0"),
    "sparse_bigbird.json": lambda: case_sparse(
        {"block": 2, "window": {"left": 1, "right": 1}, "global": [0], "random": {"per_row": 1, "seed": 7}},
        "BigBird-style sparse pattern: blocks of 2, window, global block 0, 1 random block per row", seed=21),
    "sparse_causal.json": lambda: case_sparse(
        {"block": 2, "window": 2, "global": [0], "random": {"per_row": 1, "seed": 3}, "causal": True},
        "causal sparse pattern (window of 2 blocks, global block, random) combined with mask causal",
        extra_mask="causal", seed=22),
    "sparse_n_ne_m.json": lambda: case_sparse(
        {"block": 2, "window": {"left": 1}, "global": [0], "causal": True},
        "sparse pattern with 6 queries at the end of 10 keys: blocks of 2 aligned bottom-right (query block I reads key block I + 2 and the one before), "
        "global block 0, causal", seed=23, n=6, m=10),
    "grad_one_head.json": lambda: case_grad_direct("one head, no mask", 60),
    "grad_causal_softcap.json": lambda: case_grad_direct("causal mask and softcap 2 (blocked cells pass 0)", 61, mask="causal", softcap=2.0),
    "grad_gqa.json": lambda: case_grad_direct("GQA: 4 query heads, 2 KV heads (grad_k, grad_v sum their query heads)", 62, heads=4, kv_heads=2),
    "grad_alibi.json": lambda: case_grad_direct("ALiBi, 2 heads, causal", 63, heads=2, mask="causal", alibi=True, n=5, m=5),
    "grad_empty_rows.json": lambda: case_grad_direct("an empty row under empty_rows zero passes no gradient", 64, mask="causal",
                                                     key_valid=[0, 1, 1, 1], empty_rows="zero"),
    "grad_dropout.json": lambda: case_grad_direct("dropout p = 0.25 in train mode, keep as torch's mask", 65, heads=2, mask="causal",
                                                  dropout={"p": 0.25, "seed": 9}),
    "grad_mask_forms.json": lambda: case_grad_direct(
        "a window (left 1, right 1), an additive bias and a blocked matrix together, 2 heads", 70, heads=2, n=5, m=5,
        window={"left": 1, "right": 1}, additive=True,
        blocked=[[False, False, True, False, False], [False, False, False, False, False], [True, False, False, False, False],
                 [False, False, False, False, True], [False, False, False, False, False]]),
    "grad_empty_rows_nan.json": lambda: case_grad_direct("an empty row under empty_rows nan: NaN flows back as in torch", 72,
                                                         mask="causal", key_valid=[0, 1, 1, 1], empty_rows="nan"),
    "grad_jacobian.json": case_grad_jacobian,
    "grad_tiled.json": case_grad_tiled,
    "grad_mha.json": lambda: case_grad_projected("X, W_Q, W_K, W_V with biases, W_O and b_O, 2 heads, causal", 66, causal=True),
    "grad_cross.json": lambda: case_grad_projected("cross-attention: X (5, 8) reads X_source (6, 8)", 67, cross=True),
    "grad_rope.json": lambda: case_grad_projected("RoPE base 10000, 2 heads", 68, rope={"base": 10000}),
    "grad_batch_lengths.json": lambda: case_grad_projected("a batch of 2 with lengths [5, 3]: weight gradients sum over it", 69,
                                                           batch_lengths=[5, 3]),
    "mla_compressed_rope.json": lambda: case_mla(compressed=True, rope_dims=2),
    "mla_plain.json": lambda: case_mla(compressed=False, rope_dims=0, seed=31),
    "dropout_train.json": case_dropout,
}


def main():
    outputs = [(GOLDEN_DIR / name, build) for name, build in GOLDEN_CASES.items()]
    outputs.append((EXAMPLES_DIR / "gqa_8q_2kv.json", example_gqa_8q_2kv))
    outputs.append((EXAMPLES_DIR / "sparse_longformer.json", lambda: example_sparse(
        {"window": {"left": 1, "right": 1}, "global": [0]},
        "Longformer-style sparse attention: each token reads its neighbours, [CLS] is global",
        ["[CLS]", "the", "cat", "sat", "on", "the", "warm", "mat"], seed=50)))
    outputs.append((EXAMPLES_DIR / "sparse_bigbird.json", lambda: example_sparse(
        {"block": 2, "window": {"left": 1, "right": 0}, "global": [0], "random": {"per_row": 1, "seed": 4}, "causal": True},
        "BigBird-style causal sparse attention on blocks of 2: the block before, global block 0, one random block",
        ["a", "decoder", "reads", "its", "past", "in", "blocks", "of", "two", "tokens", "at", "once"], seed=51)))
    outputs.append((EXAMPLES_DIR / "mla_small.json", example_mla))
    outputs.append((EXAMPLES_DIR / "dropout_train.json", example_dropout))
    outputs.append((EXAMPLES_DIR / "cross_attention.json", example_cross_attention))
    for path, build in outputs:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(to_json(build()) + "\n")
        checked = verify_file(path)
        print(f"wrote {path.relative_to(ROOT)}  ({path.stat().st_size} bytes, "
              f"{checked} expect entries verified with numpy)")
    print(f"{len(outputs)} files written with {TORCH}")


if __name__ == "__main__":
    main()
