"""attn_trace: transformer attention computed step by step, every matrix exact.

The Python front of attn-trace (docs/PYTHON.md): the same commands as the CLI, over the
same library, with the CLI's options in snake case::

    import attn_trace
    trace = attn_trace.run("examples/damaged_on_arrival.json", mask="causal")
    trace["weights"]          # numpy, (batch, heads, n, m)
    print(trace)              # what `attn-trace run … --color never` prints
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from . import _core
from ._errors import BackendUnavailable, Error, InternalError, ProblemError
from ._model import ModelTrace, trace_model
from ._calls import _call, _interruptible, _mask_text, _problem_options
from ._problem import Problem
from ._reports import Report, cost, load, precision, random, variance, view
from ._sdpa import get_num_threads, scaled_dot_product_attention, set_num_threads
from ._trace import Step, Steps, Trace

__version__: str = _core.version

__all__ = ["run", "decode", "tiled", "grad", "permute", "explain", "check", "exercise", "cost", "variance", "precision",
           "view", "trace_model", "ModelTrace", "random", "load", "Problem", "Report", "Trace", "Step", "Steps", "Explanation", "CheckResult", "Worksheet", "Error", "ProblemError", "BackendUnavailable", "InternalError",
           "scaled_dot_product_attention", "set_num_threads", "get_num_threads", "__version__"]


def run(problem: Any = None, *, mask: Any = None, scale: Any = None, empty_rows: str | None = None,
        dtype: str | None = None, train: bool | None = None, backend: str = "cpu", max_memory: int | str = "4G",
        allow_nonfinite: bool = False, fast: bool = False, pitfall: str | None = None, **arrays: Any) -> Trace:
    """``attn-trace run``: the full step trace (docs/COMMANDS.md#run).

    ``problem`` is a path, JSON text or a dict in the problem format; or give the arrays
    as keywords: ``run(Q=…, K=…, V=…, mask="causal")``. ``train=True`` is ``--train``,
    ``train=False`` ``--eval``."""
    options = _problem_options(mask, scale, empty_rows, dtype, train, backend, max_memory, allow_nonfinite)
    options.update(fast=fast, pitfall=pitfall or "")
    return Trace(_call(_core.run, problem, arrays, options))


def decode(problem: Any = None, *, mask: Any = None, scale: Any = None, empty_rows: str | None = None,
           dtype: str | None = None, train: bool | None = None, backend: str = "cpu", max_memory: int | str = "4G",
           allow_nonfinite: bool = False, prefill: int = 0, layers: int | None = None, bytes: float | None = None,
           tokens: int | None = None, **arrays: Any) -> Trace:
    """``attn-trace decode``: KV-cache decoding, one query at a time (docs/COMMANDS.md#decode)."""
    options = _problem_options(mask, scale, empty_rows, dtype, train, backend, max_memory, allow_nonfinite)
    options.update(prefill=prefill, layers=layers, bytes=bytes, tokens=tokens)
    return Trace(_call(_core.decode, problem, arrays, options))


def tiled(problem: Any = None, *, mask: Any = None, scale: Any = None, empty_rows: str | None = None,
          dtype: str | None = None, train: bool | None = None, backend: str = "cpu", max_memory: int | str = "4G",
          allow_nonfinite: bool = False, block_q: int = 2, block_k: int = 2, **arrays: Any) -> Trace:
    """``attn-trace tiled``: the tiled pass with online softmax (docs/COMMANDS.md#tiled)."""
    options = _problem_options(mask, scale, empty_rows, dtype, train, backend, max_memory, allow_nonfinite)
    options.update(block_q=block_q, block_k=block_k)
    return Trace(_call(_core.tiled, problem, arrays, options))


class Explanation(str):
    """``attn-trace explain``'s text (a str), shown in a notebook as Markdown with maths."""

    def __new__(cls, text: str, markdown: str | None = None) -> "Explanation":
        value = super().__new__(cls, text)
        value._markdown = markdown
        return value

    def _repr_markdown_(self) -> str | None:
        return self._markdown


def explain(problem: Any = None, *, cell: str | None = None, row: str | None = None, format: str = "text",
            head: int = 0, batch: int = 0, precision: int = 4, math: str | None = None, mask: Any = None,
            scale: Any = None, empty_rows: str | None = None, dtype: str | None = None, train: bool | None = None,
            backend: str = "cpu", max_memory: int | str = "4G", allow_nonfinite: bool = False,
            t: int | None = None, tile: tuple[int, int] | None = None, prefill: int = 0, block_q: int = 2,
            block_k: int = 2, standalone: bool = False, **arrays: Any) -> Explanation:
    """``attn-trace explain``: one number or one row, with the arithmetic that made it
    (docs/COMMANDS.md#explain). ``cell="scores[0,2]"`` or ``row="weights[1]"``; ``t`` a
    decode step (with ``prefill``), ``tile=(query block, key tile)`` a tiled one."""
    options = _problem_options(mask, scale, empty_rows, dtype, train, backend, max_memory, allow_nonfinite)
    options.update(cell=cell, row=row, head=head, batch=batch, precision=precision, t=t, tile=tile, prefill=prefill,
                   block_q=block_q, block_k=block_k)
    text = _call(_core.explain, problem, arrays, dict(options, format=format, math=math, standalone=standalone))
    markdown = text if format == "markdown" else _call(_core.explain, problem, arrays, dict(options, format="markdown", math=None))
    return Explanation(text, markdown)


def grad(problem: Any = None, *, mask: Any = None, scale: Any = None, empty_rows: str | None = None,
         dtype: str | None = None, train: bool | None = None, backend: str = "cpu", max_memory: int | str = "4G",
         allow_nonfinite: bool = False, d_out: str | None = None, row: int | None = None, tiled: bool = False,
         fast: bool = False, block_q: int | None = None, block_k: int | None = None, **arrays: Any) -> Trace:
    """``attn-trace grad``: the backward pass, step by step (docs/COMMANDS.md#grad).
    ``d_out`` is ``"ones"`` or ``"random:SEED"`` (default: the problem's, else ones)."""
    options = _problem_options(mask, scale, empty_rows, dtype, train, backend, max_memory, allow_nonfinite)
    options.update(d_out=d_out or "", row=row, tiled=tiled, fast=fast, block_q=block_q, block_k=block_k)
    return Trace(_call(_core.grad, problem, arrays, options))


def permute(problem: Any = None, *, mask: Any = None, scale: Any = None, empty_rows: str | None = None,
            dtype: str | None = None, train: bool | None = None, backend: str = "cpu", max_memory: int | str = "4G",
            allow_nonfinite: bool = False, perm: str | list[int] | None = None, seed: int = 0, source: bool = False,
            **arrays: Any) -> Trace:
    """``attn-trace permute``: the permutation experiment (docs/COMMANDS.md#permute).
    ``perm`` as ``"2,0,1"`` or ``[2, 0, 1]``; without it P is drawn from ``seed``."""
    options = _problem_options(mask, scale, empty_rows, dtype, train, backend, max_memory, allow_nonfinite)
    if perm is not None and not isinstance(perm, str):
        perm = ",".join(str(int(i)) for i in perm)
    options.update(perm=perm or "", seed=seed, source=source)
    return Trace(_call(_core.permute, problem, arrays, options))


class CheckResult:
    """What ``attn-trace check`` finds (docs/COMMANDS.md#check): ``passed`` and ``failed``
    count files, ``failures`` lists each differing step, ``exit_code`` is the CLI's
    (a check that finds differences is a result, not an error), ``str()`` its text."""

    def __init__(self, report: Any):
        self.passed: int = report.passed
        self.failed: int = report.failed
        self.exit_code: int = report.exit_code
        self.files: list[dict[str, Any]] = list(report.files)
        self.failures: list[dict[str, Any]] = [dict(failure, file=f["file"]) for f in self.files for failure in f["failures"]]
        self._text: str = report.text

    def __bool__(self) -> bool:
        return self.exit_code == 0

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"<attn_trace.CheckResult {self.passed} passed, {self.failed} failed>"


def check(*files: str | os.PathLike | Problem, golden: str | os.PathLike | None = None, mask: Any = None, scale: Any = None,
          empty_rows: str | None = None, dtype: str | None = None, backend: str = "cpu", atol: float | None = None,
          rtol: float | None = None, block_q: int = 2, block_k: int = 2, prefill: int = 0,
          allow_nonfinite: bool = False, max_memory: int | str = "4G", decimals: int | None = None) -> CheckResult:
    """``attn-trace check FILE…``: every file's expect entries, or one file against a golden trace;
    ``decimals=2`` checks answers written to 2 decimals (docs/COMMANDS.md#check)."""
    if not files:
        raise ProblemError("check needs at least one problem file")
    paths = []
    for file in files:
        if isinstance(file, Problem) and file.path is None:
            raise ProblemError("check reads problem files: write this problem with problem.to_json(path) and check that path")
        paths.append(file.path if isinstance(file, Problem) else os.fspath(file))
    result = CheckResult(_interruptible(_core.check, {
        "files": paths, "golden": os.fspath(golden) if golden is not None else "",
        "mask": _mask_text(mask),
        "scale": None if scale is None else str(scale), "empty_rows": empty_rows, "dtype": dtype, "backend": backend,
        "atol": atol, "rtol": rtol, "block_q": block_q, "block_k": block_k, "prefill": prefill,
        "allow_nonfinite": allow_nonfinite, "max_memory": max_memory, "decimals": decimals}))
    # What the CLI writes on standard error for a file it could not read (its line in the
    # text says ERROR) is a warning here, with the same words.
    for file in result.files:
        if file["error"] is not None:
            warnings.warn(f"attn-trace: error: {file['error']}", RuntimeWarning, stacklevel=2)
    return result


class Worksheet(str):
    """``attn-trace exercise``'s document (a str); a Markdown one shows as Markdown with maths."""

    format: str = "markdown"

    def _repr_markdown_(self) -> str | None:
        return str(self) if self.format == "markdown" else None

    def _repr_latex_(self) -> str | None:
        return str(self) if self.format == "latex" else None


def exercise(topic: str | list[str], *, seed: int = 0, count: int = 1, part: str = "both", format: str = "markdown",
             math: str | None = None, standalone: bool = False) -> Worksheet:
    """``attn-trace exercise``: a worked exercise or a sheet of them (docs/COMMANDS.md#exercise)."""
    topics = topic.split(",") if isinstance(topic, str) else list(topic)
    sheet = Worksheet(_interruptible(_core.exercise, {"topics": topics, "seed": seed, "count": count, "part": part,
                                                       "format": format, "math": math, "standalone": standalone}))
    sheet.format = format
    return sheet
