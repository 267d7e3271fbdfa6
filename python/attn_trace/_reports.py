"""The commands whose result is a report, not a trace: cost, variance, precision and view; and
problems made once, by ``load`` and ``random`` (docs/PYTHON.md#reports)."""

from __future__ import annotations

import json
import operator
import os
from typing import Any

from . import _core
from ._calls import _call, _interruptible, _mask_text, _problem_options
from ._errors import ProblemError
from ._problem import Problem, source_of
from ._trace import framed


class Report:
    """A command's report in every format it writes: ``str()`` is the text the CLI prints,
    ``render(format)`` another format, ``json`` the JSON output read, ``svg`` the chart
    where the command draws one."""

    def __init__(self, command: str, texts: dict[str, str]):
        self.command = command
        self._texts = texts
        self.svg: str | None = texts.pop("svg", None)
        self.json: dict[str, Any] = json.loads(texts["json"])

    def render(self, format: str = "text", *, standalone: bool = False) -> str:
        """The report in ``format``; ``standalone=True`` (LaTeX) a whole document, as ``--standalone``."""
        if format not in self._texts:
            raise ProblemError(f"format {format}: {self.command} writes {', '.join(self._texts)}")
        text = self._texts[format]
        return _interruptible(_core.written_document, {"text": text, "format": format, "standalone": True}) if standalone else text

    def __str__(self) -> str:
        return self._texts["text"]

    def __repr__(self) -> str:
        return f"<attn_trace.Report {self.command}: {', '.join(self._texts)}>"

    def _repr_markdown_(self) -> str | None:
        return self._texts.get("markdown")

    def _repr_latex_(self) -> str | None:
        return self._texts.get("latex")

    def _repr_html_(self) -> str | None:
        page = self._texts.get("html")
        return None if page is None else framed(page)


def _report(command: str, formats: tuple[str, ...], texts: list[str]) -> Report:
    return Report(command, dict(zip(formats, texts)))


def cost(n: int | list[int], *, d_model: int | None = None, heads: int | None = None, kv_heads: int | None = None,
         layers: int | None = None, tokens: int | None = None, bytes: float | None = None, sparse: Any = None,
         mla: str | tuple[int, int] | None = None, model: str | None = None) -> Report:
    """``attn-trace cost``: FLOPs, score memory, KV-cache bytes and parameters (docs/COMMANDS.md#cost).
    ``sparse`` a pattern as a dict or JSON text, ``mla`` ``(d_c, d_r)`` or ``"512,64"``,
    ``model`` a model directory."""
    lengths = [operator.index(length) for length in (n if isinstance(n, (list, tuple)) else [n])]
    if mla is not None and not isinstance(mla, str):
        mla = ",".join(str(int(width)) for width in mla)
    if sparse is not None and not isinstance(sparse, str):
        sparse = json.dumps(sparse)
    texts = _interruptible(_core.cost, {"n": lengths, "d_model": d_model, "heads": heads, "kv_heads": kv_heads,
                                        "layers": layers, "tokens": tokens, "bytes": bytes, "sparse": sparse or "",
                                        "mla": mla or "", "model": str(model or "")})
    return _report("cost", ("text", "json"), texts)


def variance(*, dk: list[int] | tuple[int, ...] = (4, 16, 64, 256, 1024), samples: int = 20000, keys: int = 32, queries: int = 2000,
             seed: int = 0) -> Report:
    """``attn-trace variance``: the √d_k experiment (docs/COMMANDS.md#variance); ``svg`` its chart."""
    texts = _interruptible(_core.variance, {"dk": list(dk), "samples": samples, "keys": keys, "queries": queries,
                                            "seed": seed})
    return _report("variance", ("text", "json", "svg"), texts)


def precision(problem: Any = None, *, mask: Any = None, scale: Any = None, empty_rows: str | None = None,
              train: bool | None = None, backend: str = "cpu", max_memory: int | str = "4G",
              allow_nonfinite: bool = False, max_shift: bool = True, **arrays: Any) -> Report:
    """``attn-trace precision``: f64, f32, f16 and bf16 side by side (docs/COMMANDS.md#precision).
    ``max_shift=False`` is ``--no-max-shift``; ``svg`` the chart of each step's error."""
    options = _problem_options(mask, scale, empty_rows, None, train, backend, max_memory, allow_nonfinite)
    texts = _call(_core.precision, problem, arrays, dict(options, max_shift=max_shift))
    return _report("precision", ("text", "json", "markdown", "latex", "svg"), texts)


def view(*files: str | os.PathLike, mask: Any = None, scale: Any = None, empty_rows: str | None = None,
         dtype: str | None = None, train: bool | None = None, backend: str = "cpu", max_memory: int | str = "4G",
         allow_nonfinite: bool = False, precision: int = 4) -> Report:
    """``attn-trace view FILE…``: one problem file per layer of a model, side by side
    (docs/COMMANDS.md#view); ``report.json["layers"][l]["heads"][h]["weights"]`` each head's weights;
    ``render("html")`` (and the notebook's display) the model view page."""
    if not files:
        raise ProblemError("view needs one problem file per layer, e.g. layer0.json layer1.json")
    options = _problem_options(mask, scale, empty_rows, dtype, train, backend, max_memory, allow_nonfinite)
    options.update(files=[os.fspath(f) for f in files], precision=precision,
                   explain='attn_trace.explain("{file}", cell="{cell}", head={head})')
    return _report("view", ("text", "json", "html"), _interruptible(_core.view, options))


def load(problem: Any = None, *, allow_nonfinite: bool = False, **arrays: Any) -> Problem:
    """Reads and checks a problem once: a path, JSON text, a dict or keyword arrays, as
    ``run`` takes them (docs/PYTHON.md#problems)."""
    source = dict(source_of(problem, arrays))
    if allow_nonfinite:
        source["allow_nonfinite"] = True
    facts = _core.load(**source)  # the CLI's message for a file that is missing or wrong
    path = None
    if "path" in source:
        # Read once: the file's text is kept, named by its absolute path, so that later edits
        # and another working directory change nothing (its own paths resolve from its folder).
        path = os.path.abspath(source.pop("path"))
        with open(path, encoding="utf-8") as file:
            source.update(text=file.read(), label=path)
    return Problem(source, facts, path)


def random(*, n: int = 4, m: int = 0, d_model: int = 0, dk: int = 2, dv: int = 0, heads: int = 1, kv_heads: int = 0,
           seed: int = 0, dist: str = "normal", mask: Any = None, literal: bool = False) -> Problem:
    """``attn-trace random``: a seeded random problem, the same on every platform
    (docs/COMMANDS.md#random); ``to_json()`` is the file the CLI writes."""
    text = _core.random(n=n, m=m, d_model=d_model, dk=dk, dv=dv, heads=heads, kv_heads=kv_heads, seed=seed, dist=dist,
                        mask=_mask_text(mask) or "", literal=literal)
    return load(text)
