"""examples/attention.ipynb executed by a real Jupyter kernel (nbclient, ipykernel), as a
reader of the lesson runs it: any error output fails, and every rich output also carries
a text/plain form (GitHub and untrusted notebooks strip scripts and frames). Its traces,
shown one after another as a notebook shows them, then go to headless chromium
(tests/browser/notebook_frames.py)."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from browser_check import run_browser_script

SOURCE = Path(os.environ.get("SOURCE_DIR", Path(__file__).resolve().parents[2]))


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
    run_browser_script("notebook_frames.py", str(page))
