"""examples/attention.ipynb executed by a real Jupyter kernel (nbclient, ipykernel), as a
reader of the lesson runs it: any error output fails, and every rich output also carries
a text/plain form (GitHub and untrusted notebooks strip scripts and frames)."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

SOURCE = Path(os.environ.get("SOURCE_DIR", Path(__file__).resolve().parents[2]))


def test_the_lesson_runs_and_every_output_has_a_text_form() -> None:
    path = SOURCE / "examples" / "attention.ipynb"
    notebook = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), "stored with outputs"
    NotebookClient(notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
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
    html = next(o.data["text/html"] for c in notebook.cells for o in c.get("outputs", []) if "text/html" in o.get("data", {}))
    assert html.startswith('<iframe class="attn-trace" srcdoc="')
