"""A problem as Python gives it, turned into what the commands layer reads: a path, or
JSON text in the problem format of docs/PROBLEM.md (docs/PYTHON.md#problems)."""

from __future__ import annotations

import json
import math
import os
from typing import Any

import numpy as np

from ._errors import ProblemError

def _plain(value: Any) -> Any:
    """A value JSON can hold: arrays (numpy, torch through __dlpack__ or __array__) as
    nested lists, non-finite numbers as the strings the problem format reads."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, (str, bool, int)) or value is None:
        return value
    if isinstance(value, np.generic):
        return _plain(value.item())
    if hasattr(value, "requires_grad") and getattr(value, "requires_grad"):
        value = value.detach()
    if hasattr(value, "__dlpack__") or hasattr(value, "__array__"):
        try:
            array = np.from_dlpack(value) if hasattr(value, "__dlpack__") and not isinstance(value, np.ndarray) else np.asarray(value)
        except (TypeError, RuntimeError, BufferError):
            array = np.asarray(value)
        if array.dtype == np.bool_:
            return array.tolist()
        return _plain(array.astype(np.float64).tolist())
    return value


class Problem:
    """A problem read and checked once (``attn_trace.load``, ``attn_trace.random``): every
    command takes it where it takes a path (docs/PYTHON.md#problems)."""

    def __init__(self, source: dict[str, Any], facts: dict[str, Any], path: str | None = None):
        self._source = source
        self.path = path  # the file it was read from (absolute), for check
        for name in ("title", "batch", "n", "m", "heads", "kv_heads", "d_k", "d_v", "d_model"):
            setattr(self, name, facts[name])
        self.tokens: list[str] = list(facts["tokens"])

    def to_json(self, path: str | os.PathLike | None = None) -> str:
        """The problem file's text, which ``attn-trace run`` reads to the same trace; written
        to ``path`` too when given. A problem loaded from a file is that file's text as it was
        read: paths inside it (a checkpoint, an array file) stay relative to its folder."""
        from . import _core

        text = self._source["text"] if self.path else _core.problem_file_text(self._source["text"])
        if path is not None:
            with open(path, "w", encoding="utf-8") as file:
                file.write(text)
        return text

    def __repr__(self) -> str:
        title = f" {self.title!r}:" if self.title else ""
        return (f"<attn_trace.Problem{title} batch {self.batch}, n = {self.n}, m = {self.m}, {self.heads} head"
                f"{'' if self.heads == 1 else 's'}, d_k = {self.d_k}, d_v = {self.d_v}>")


def source_of(problem: Any, arrays: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of the extension's ``path=`` / ``text=`` / ``label=``."""
    if problem is not None and arrays:
        raise ProblemError(f"a problem is given once: either {type(problem).__name__} or keyword arrays "
                           f"({', '.join(sorted(arrays))}), not both")
    if problem is None:
        if not arrays:
            raise ProblemError("no problem: give a path, JSON text, a dict, or arrays such as Q=…, K=…, V=…")
        problem = arrays
    if isinstance(problem, Problem):
        return dict(problem._source)
    if isinstance(problem, os.PathLike):
        return {"path": os.fspath(problem)}
    if isinstance(problem, str):
        if problem.lstrip().startswith("{"):
            return {"text": problem, "label": "<json>"}
        return {"path": problem}
    if isinstance(problem, dict):
        return {"text": json.dumps(_plain(problem)), "label": "<dict>"}
    raise ProblemError(f"a problem is a path, JSON text, a dict or keyword arrays, found {type(problem).__name__}")


def size_bytes(value: int | str, name: str) -> int:
    """``4G``, ``512M``, ``1000000`` as bytes (K, M, G, T are powers of 1024), as the CLI reads --max-memory."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ProblemError(f"{name} {value}: expected a size of at least 0 bytes")
        return value
    text = str(value).strip()
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    number, unit = text, ""
    for suffix in ("KIB", "MIB", "GIB", "TIB", "KB", "MB", "GB", "TB", "K", "M", "G", "T", "B"):
        if text.upper().endswith(suffix):
            number, unit = text[: -len(suffix)].strip(), suffix[0] if suffix != "B" else ""
            break
    try:
        amount = float(number)
    except ValueError:
        raise ProblemError(f"{name} {value!r}: expected a size such as 4G, 512M or a number of bytes") from None
    if not math.isfinite(amount) or amount < 0:
        raise ProblemError(f"{name} {value!r}: expected a size such as 4G, 512M or a number of bytes")
    return int(amount * units[unit])
