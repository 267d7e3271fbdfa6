"""attn_trace.scaled_dot_product_attention against a numpy reference written from
PyTorch's documented meaning, and against PyTorch itself where it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import attn_trace
from attn_trace import scaled_dot_product_attention as sdpa


def reference(q, k, v, mask=None, is_causal=False, scale=None, enable_gqa=False):
    """PyTorch's reference implementation in its documentation, in float64."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    L, S = q.shape[-2], k.shape[-2]
    s = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    bias = np.zeros((L, S))
    if is_causal:
        bias[np.triu_indices(L, 1, S)] = -np.inf
    if mask is not None:
        mask = np.asarray(mask)
        bias = np.where(mask, 0.0, -np.inf) if mask.dtype == np.bool_ else bias + mask
    if enable_gqa:
        group = q.shape[-3] // k.shape[-3]
        k, v = np.repeat(k, group, axis=-3), np.repeat(v, group, axis=-3)
    z = q @ np.swapaxes(k, -1, -2) * s + bias
    top = np.max(z, axis=-1, keepdims=True)
    e = np.exp(z - np.where(np.isfinite(top), top, 0))
    total = e.sum(axis=-1, keepdims=True)
    a = np.where(total > 0, e / np.where(total > 0, total, 1), 0.0)  # a fully masked row is 0 (PyTorch ≥ 2.5)
    return a @ v


rng = np.random.default_rng(7)


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 2e-6)])
def test_shapes_masks_and_causal(dtype, tol) -> None:
    q = rng.standard_normal((2, 3, 5, 4)).astype(dtype)
    k = rng.standard_normal((2, 3, 7, 4)).astype(dtype)
    v = rng.standard_normal((2, 3, 7, 6)).astype(dtype)
    for kwargs in ({}, {"is_causal": True}, {"scale": 0.3},
                   {"attn_mask": rng.standard_normal((5, 7))},  # a float bias, broadcast over batch and heads
                   {"attn_mask": rng.random((3, 1, 7)) > 0.3},  # boolean, per head, broadcast over rows
                   {"attn_mask": rng.random((2, 3, 5, 7)) > 0.5}):
        out = sdpa(q, k, v, **kwargs)
        assert out.dtype == dtype and out.shape == (2, 3, 5, 6)
        np.testing.assert_allclose(out, reference(q, k, v, kwargs.get("attn_mask"), kwargs.get("is_causal", False),
                                                  kwargs.get("scale")), rtol=0, atol=tol)


def test_two_axes_and_gqa() -> None:
    q = rng.standard_normal((6, 8))
    np.testing.assert_allclose(sdpa(q, q, q), reference(q, q, q), atol=1e-12)
    q = rng.standard_normal((1, 8, 9, 16))
    k = rng.standard_normal((1, 2, 9, 16))
    v = rng.standard_normal((1, 2, 9, 16))
    np.testing.assert_allclose(sdpa(q, k, v, enable_gqa=True, is_causal=True),
                               reference(q, k, v, is_causal=True, enable_gqa=True), atol=1e-12)
    with pytest.raises(ValueError, match="enable_gqa"):
        sdpa(q, k, v)


def test_a_fully_masked_row_is_zero_and_masked_weights_are_exact() -> None:
    q = rng.standard_normal((1, 1, 3, 4))
    mask = np.ones((3, 3), dtype=bool)
    mask[1] = False
    out = sdpa(q, q, q, attn_mask=mask)
    assert (out[0, 0, 1] == 0).all()
    np.testing.assert_allclose(out, reference(q, q, q, mask), atol=1e-12)


def test_refusals() -> None:
    q = np.zeros((2, 4))
    with pytest.raises(ValueError, match="dropout"):
        sdpa(q, q, q, dropout_p=0.1)
    with pytest.raises(ValueError, match="float32 or all float64"):
        sdpa(q.astype(np.float16), q.astype(np.float16), q.astype(np.float16))
    with pytest.raises(ValueError, match="not both"):
        sdpa(q, q, q, attn_mask=np.zeros((2, 2)), is_causal=True)
    with pytest.raises(ValueError, match="broadcast"):
        sdpa(q, q, q, attn_mask=np.zeros((3, 3)))
    with pytest.raises(ValueError):
        attn_trace.set_num_threads(-1)


def test_threads_do_not_change_the_numbers() -> None:
    q = rng.standard_normal((1, 4, 300, 32)).astype(np.float32)
    attn_trace.set_num_threads(1)
    one = sdpa(q, q, q, is_causal=True)
    attn_trace.set_num_threads(0)
    assert attn_trace.get_num_threads() == 0
    np.testing.assert_array_equal(one, sdpa(q, q, q, is_causal=True))


def test_against_pytorch_where_installed() -> None:
    torch = pytest.importorskip("torch")
    q = torch.randn(2, 4, 33, 16, dtype=torch.float64)
    k = torch.randn(2, 2, 40, 16, dtype=torch.float64)
    v = torch.randn(2, 2, 40, 8, dtype=torch.float64)
    mask = torch.rand(33, 40) > 0.2
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    got = sdpa(q, k, v, attn_mask=mask, enable_gqa=True)
    assert isinstance(got, torch.Tensor)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
