"""examples/attention.ipynb executed by a real Jupyter kernel (nbclient, ipykernel), as a
reader of the lesson runs it: any error output fails, and every rich output also carries
a text/plain form (GitHub and untrusted notebooks strip scripts and frames). Its traces,
shown one after another as a notebook shows them, then go to headless chromium
(tests/browser/notebook_frames.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

SOURCE = Path(os.environ.get("SOURCE_DIR", Path(__file__).resolve().parents[2]))
# Debian's python3, which holds Debian's selenium (tests/browser/chromium.py).
BROWSER_PYTHON = "/usr/bin/python3"


@pytest.fixture(scope="module")
def notebook() -> nbformat.NotebookNode:
    path = SOURCE / "examples" / "attention.ipynb"
    notebook = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), "stored with outputs"
    NotebookClient(notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    return notebook


def html_outputs(notebook: nbformat.NotebookNode) -> list[str]:
    return [o.data["text/html"] for c in notebook.cells for o in c.get("outputs", []) if "text/html" in o.get("data", {})]


def test_the_lesson_runs_and_every_output_has_a_text_form(notebook: nbformat.NotebookNode) -> None:
    kinds = set()
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            assert output.output_type != "error", output
            assert output.get("name") != "stderr", output.get("text")
            if output.output_type in ("display_data", "execute_result"):
                assert "text/plain" in output.data, output.data.keys()
                kinds.update(output.data)
    # The trace shows as its page in a frame, the explanation as Markdown.
    assert {"text/html", "text/markdown"} <= kinds
    assert html_outputs(notebook)[0].startswith('<iframe class="attn-trace" srcdoc="')


def test_each_trace_in_its_frame_draws_explains_and_keeps_to_itself(notebook: nbformat.NotebookNode, tmp_path: Path) -> None:
    """Every text/html output of the notebook on one page, one after another: chromium
    draws each trace, a click explains its number in its own frame only, no console
    errors, nothing fetched. Skipped without chromium, unless ATTN_TRACE_REQUIRE_BROWSER=1 (CI)."""
    outputs = html_outputs(notebook)
    assert len(outputs) >= 2, "the lesson shows fewer than two traces"
    page = tmp_path / "notebook.html"
    page.write_text('<!doctype html>\n<html lang="en">\n<head><meta charset="utf-8"><title>attention.ipynb</title></head>\n<body>\n'
                    + "".join(f'<div class="output">{output}</div>\n' for output in outputs) + "</body>\n</html>\n", encoding="utf-8")
    if shutil.which(BROWSER_PYTHON) is None:
        skip_unless_required(f"{BROWSER_PYTHON} is missing: the browser check needs Debian's python3 and its python3-selenium")
    result = subprocess.run([BROWSER_PYTHON, str(SOURCE / "tests" / "browser" / "notebook_frames.py"), str(page)],
                            capture_output=True, text=True, timeout=300)
    if result.returncode == 77:
        skip_unless_required(result.stdout.strip())
    assert result.returncode == 0, result.stdout + result.stderr


def skip_unless_required(reason: str) -> None:
    if os.environ.get("ATTN_TRACE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason}; ATTN_TRACE_REQUIRE_BROWSER=1 asks for the browser check")
    pytest.skip(reason)
