"""How the package calls the extension: a problem's source and the options the commands
share, on a worker thread that Ctrl-C can leave (docs/PYTHON.md#commands)."""

from __future__ import annotations

import json
import threading
from typing import Any

from ._problem import size_bytes, source_of


def _call(function: Any, problem: Any, arrays: dict[str, Any], options: dict[str, Any]) -> Any:
    """Calls the extension with the problem's source and the options."""
    kwargs = dict(options)
    kwargs.update(source_of(problem, arrays))  # a loaded Problem's allow_nonfinite=True holds
    return _interruptible(function, kwargs)


def _interruptible(function: Any, kwargs: dict[str, Any]) -> Any:
    """Calls the extension on a worker thread, so that Ctrl-C (a notebook's interrupt)
    raises KeyboardInterrupt here within a tenth of a second. The work itself cannot be
    stopped midway: it finishes in the background and its result is dropped."""
    if "max_memory" in kwargs:
        kwargs["max_memory"] = size_bytes(kwargs["max_memory"], "max_memory")
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = function(**kwargs)
        except BaseException as error:  # handed to the caller's thread
            outcome["error"] = error

    worker = threading.Thread(target=work, name="attn_trace", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.1)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _mask_text(mask: Any) -> str | None:
    """A mask as the commands read it: a string form as it is, a list or dict as JSON."""
    return None if mask is None else mask if isinstance(mask, str) else json.dumps(mask)


def _problem_options(mask: str | list | dict | None, scale: str | float | None, empty_rows: str | None,
                     dtype: str | None, train: bool | None, backend: str, max_memory: int | str,
                     allow_nonfinite: bool) -> dict[str, Any]:
    return {
        "mask": _mask_text(mask),
        "scale": None if scale is None else str(scale),
        "empty_rows": empty_rows, "dtype": dtype, "train": train, "backend": backend,
        "max_memory": max_memory, "allow_nonfinite": allow_nonfinite,
    }
