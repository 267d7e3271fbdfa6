"""A computed trace as Python holds it (docs/PYTHON.md#traces): its steps as numpy
arrays in PyTorch's layout, and its output exactly as the CLI prints it."""

from __future__ import annotations

import html
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from . import _core


def framed(page: str) -> str:
    """A page in a frame of its own, as the notebook shows it: its scripts and styles cannot
    meet another page's in the same notebook, and nothing is fetched from a network."""
    return (f'<iframe class="attn-trace" srcdoc="{html.escape(page, quote=True)}" '
            'style="width: 100%; height: 600px; border: 1px solid #ccc; box-sizing: border-box" '
            'sandbox="allow-scripts"></iframe>')


class Step:
    """One step of a trace: ``name``, ``symbol``, ``formula``, ``shape`` (as the CLI prints
    a single matrix of it) and ``values``, every matrix of the step in the layout of
    docs/PYTHON.md#array-shapes."""

    def __init__(self, name: str, parts: list[Any], widen: bool):
        first = parts[0]
        self.name = name
        self.symbol: str = first.symbol
        self.formula: str = first.formula
        self.shape: tuple[int, int] = tuple(first.shape)
        self._parts = parts
        self._widen = widen
        self._values: Any = None

    @property
    def values(self) -> Any:
        if self._values is None:
            self._values = _layout(self._parts, self._widen)
        return self._values

    def __repr__(self) -> str:
        return f"Step({self.name!r}, {self.symbol} = {self.formula}, {self.shape})"


def _array(part: Any, widen: bool) -> np.ndarray:
    values = part.values
    return values.astype(np.float32) if widen else values


def _stack(parts: list[Any], widen: bool) -> np.ndarray:
    """(batch, heads, rows, cols) for per-head parts, (batch, rows, cols) for per-sequence
    ones, (rows, cols) for one problem-level matrix; shorter matrices of a batch padded with NaN."""
    per_head = any(p.head is not None for p in parts)
    per_batch = any(p.batch is not None for p in parts)
    if not per_head and not per_batch and len(parts) == 1:
        return _array(parts[0], widen)
    batches = max((p.batch or 0) for p in parts) + 1
    heads = max((p.head or 0) for p in parts) + 1
    rows = max(p.shape[0] for p in parts)
    cols = max(p.shape[1] for p in parts)
    dtype = np.float32 if widen else np.float64
    if per_head:
        out = np.full((batches, heads, rows, cols), np.nan, dtype=dtype)
        for p in parts:
            r, c = p.shape
            out[p.batch or 0, p.head or 0, :r, :c] = _array(p, widen)
        return out
    out = np.full((batches, rows, cols), np.nan, dtype=dtype)
    for p in parts:
        r, c = p.shape
        out[p.batch or 0, :r, :c] = _array(p, widen)
    return out


def _layout(parts: list[Any], widen: bool) -> Any:
    """decode's steps per query t and tiled's per tile come as a dict keyed by t or by
    (query block, key tile), each value laid out as a whole step is."""
    if any(p.t is not None for p in parts):
        keyed: dict[Any, list[Any]] = {}
        for p in parts:
            keyed.setdefault(p.t, []).append(p)
        return {key: _stack(group, widen) for key, group in sorted(keyed.items())}
    if any(p.tile is not None for p in parts):
        keyed = {}
        for p in parts:
            keyed.setdefault(tuple(p.tile), []).append(p)
        return {key: _stack(group, widen) for key, group in sorted(keyed.items())}
    return _stack(parts, widen)


class Steps(Mapping):
    """The trace's steps by name, in the order the trace computed them."""

    def __init__(self, result: Any, widen: bool):
        grouped: dict[str, list[Any]] = {}
        for part in result.steps:
            grouped.setdefault(part.name, []).append(part)
        self._steps = {name: Step(name, parts, widen) for name, parts in grouped.items()}

    def __getitem__(self, name: str) -> Step:
        try:
            return self._steps[name]
        except KeyError:
            raise KeyError(f"this trace has no step {name!r}; it has: {', '.join(self._steps)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._steps)

    def __len__(self) -> int:
        return len(self._steps)


class Trace:
    """What ``run``, ``decode``, ``tiled`` and ``grad`` return (docs/PYTHON.md#traces)."""

    def __init__(self, result: Any):
        self._result = result
        self.command: str = result.command
        self.dtype: str = result.dtype
        self.tokens: list[str] = list(result.tokens)
        self.lengths: list[int] = list(result.lengths)
        self.notes: list[str] = list(result.notes)
        self.steps = Steps(result, widen=result.dtype != "f64")

    def __getitem__(self, name: str) -> Any:
        return self.steps[name].values

    def render(self, format: str = "text", *, steps: list[str] | str | None = None, head: int | None = None,
               batch: int | None = None, precision: int = 4, full: bool = False, heatmap: bool = False,
               math: str | None = None, color: bool = False, max_output: int | str = "256M", standalone: bool = False) -> str:
        """The text ``attn-trace COMMAND … --format FORMAT`` prints for the same problem and
        options, byte for byte (``color=False`` is ``--color never``; ``standalone=True`` is
        ``--standalone``, LaTeX as a whole document)."""
        from ._problem import size_bytes

        if isinstance(steps, str):
            steps = steps.split(",")
        return self._result.render(format=format, steps=list(steps or []), head=head, batch=batch, precision=precision,
                                   full=full, heatmap=heatmap, math=math, color=color,
                                   max_output=size_bytes(max_output, "max_output"), standalone=standalone)

    def svg(self, *, steps: list[str] | None = None, head: int | None = None, batch: int | None = None) -> str:
        """The weights of each head as the SVG heatmap ``--svg`` writes."""
        return self._result.svg(steps=list(steps or []), head=head, batch=batch)

    def __str__(self) -> str:
        return self.render("text")

    def __repr__(self) -> str:
        r = self._result
        return (f"<attn_trace.Trace {self.command}: batch {r.batch}, n = {r.n}, m = {r.m}, {r.heads} head"
                f"{'' if r.heads == 1 else 's'}, {len(self.steps)} steps, {self.dtype}>")

    def _repr_html_(self) -> str:
        return framed(self.render("html"))

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))
