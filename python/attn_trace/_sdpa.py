"""``scaled_dot_product_attention`` with PyTorch's signature and meaning, computed by
attn-trace's fast path (docs/PYTHON.md#scaled_dot_product_attention)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _core
from ._errors import ProblemError

_threads = 0  # 0: one per core


def set_num_threads(threads: int) -> None:
    """The threads the fast path uses (as ``torch.set_num_threads``); 0 for one per core."""
    global _threads
    if int(threads) < 0:
        raise ProblemError(f"set_num_threads({threads}): expected 0 (one per core) or more")
    _threads = int(threads)


def get_num_threads() -> int:
    return _threads


def _is_torch(value: Any) -> bool:
    return type(value).__module__.startswith("torch")


def _as_numpy(value: Any, name: str) -> np.ndarray:
    if getattr(value, "requires_grad", False):
        raise ValueError(f"{name} requires grad: attn_trace computes the forward only (detach it first)")
    if _is_torch(value):
        if value.device.type != "cpu":
            raise ValueError(f"{name} is on {value.device}: attn_trace reads CPU tensors")
        return np.from_dlpack(value.contiguous())
    return np.asarray(value)


def scaled_dot_product_attention(query: Any, key: Any, value: Any, attn_mask: Any = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None, enable_gqa: bool = False) -> Any:
    """softmax(scale · query keyᵀ + mask) value over the last two axes, as
    ``torch.nn.functional.scaled_dot_product_attention``: shapes (…, L, E), (…, S, E),
    (…, S, Ev); a boolean mask True where a query may attend, a float mask added to the
    scores, broadcast as PyTorch broadcasts it; ``is_causal`` aligned top-left (query i
    reads keys j ≤ i); ``enable_gqa`` lets H query heads share H / H_kv consecutive ones of
    H_kv key/value heads. float32 and float64; numpy in, numpy out; torch in, torch out. A
    row that can read no key is 0, as PyTorch 2.5 and later return it."""
    if dropout_p != 0.0:
        raise ValueError(f"dropout_p = {dropout_p}: attn_trace computes attention without dropout; pass 0")
    q, k, v = (_as_numpy(x, n) for x, n in ((query, "query"), (key, "key"), (value, "value")))
    if q.dtype not in (np.float32, np.float64) or k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError(f"query, key and value must all be float32 or all float64, found {q.dtype}, {k.dtype}, {v.dtype}")
    if q.ndim < 2 or k.ndim != q.ndim or v.ndim != q.ndim:
        raise ValueError(f"query, key and value need the same number of axes, at least 2 (…, L, E): found {q.ndim}, {k.ndim}, {v.ndim}")
    L, E, S, Ev = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
    lead = q.shape[:-3] if q.ndim >= 3 else ()
    heads = q.shape[-3] if q.ndim >= 3 else 1
    kv_heads = k.shape[-3] if k.ndim >= 3 else 1
    if k.shape[:-3] != lead or v.shape[:-3] != lead or (k.ndim >= 3 and v.shape[-3] != kv_heads):
        raise ValueError(f"query {q.shape}, key {k.shape} and value {v.shape}: their leading axes differ")
    if kv_heads != heads and not (enable_gqa and heads % kv_heads == 0):
        raise ValueError(f"{heads} query heads and {kv_heads} key/value heads: "
                         + ("the query heads must be a multiple of them" if enable_gqa else "pass enable_gqa=True to share them"))
    batch = int(np.prod(lead)) if lead else 1
    q4, k4, v4 = (np.ascontiguousarray(x, dtype=np.float64).reshape(batch, h, rows, cols)
                  for x, h, rows, cols in ((q, heads, L, E), (k, kv_heads, S, E), (v, kv_heads, S, Ev)))
    mask = None
    if attn_mask is not None:
        m = _as_numpy(attn_mask, "attn_mask")
        if m.dtype == np.bool_:
            m = np.where(m, 0.0, -np.inf)
        try:
            full = np.broadcast_to(m, lead + (heads, L, S))
        except ValueError:
            raise ValueError(f"attn_mask {m.shape} does not broadcast to {lead + (heads, L, S)}") from None
        full = full.reshape(batch, heads, L, S)
        # Keep only the axes the mask varies along: a broadcast axis has stride 0.
        per_batch = batch > 1 and full.strides[0] != 0
        per_head = heads > 1 and full.strides[1] != 0
        mask = np.ascontiguousarray(full[: batch if per_batch else 1, : heads if per_head else 1], dtype=np.float64)
    out = _core.sdpa(q4, k4, v4, mask, bool(is_causal), 1.0 / math.sqrt(E) if scale is None else float(scale),
                     "f64" if q.dtype == np.float64 else "f32", _threads)
    out = out.reshape(lead + ((heads,) if q.ndim >= 3 else ()) + (L, Ev)).astype(q.dtype, copy=False)
    if _is_torch(query):
        import torch

        return torch.from_numpy(out)
    return out
