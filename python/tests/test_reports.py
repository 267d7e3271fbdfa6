"""cost, variance, precision, random and load against the CLI they mirror
(docs/PYTHON.md#reports, #problems-made-once): every format byte for byte, the JSON read
back, the CLI's refusals as ProblemError."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import attn_trace

SOURCE = Path(os.environ.get("SOURCE_DIR", Path(__file__).resolve().parents[2]))
BINARY = os.environ.get("ATTN_TRACE", str(SOURCE / "build" / "attn-trace"))
DAMAGED = SOURCE / "examples" / "damaged_on_arrival.json"


def cli(*args: str) -> str:
    result = subprocess.run([BINARY, *args], cwd=SOURCE, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


COSTS = [
    (["--n", "120", "--d-model", "64", "--heads", "4"], dict(n=120, d_model=64, heads=4)),
    (["--n", "8192", "--d-model", "4096", "--heads", "32", "--kv-heads", "8", "--layers", "32", "--bytes", "2"],
     dict(n=8192, d_model=4096, heads=32, kv_heads=8, layers=32, bytes=2)),
    (["--n", "1024,4096", "--d-model", "768", "--heads", "12", "--sparse", '{"window": 3, "global": [0]}'],
     dict(n=[1024, 4096], d_model=768, heads=12, sparse={"window": 3, "global": [0]})),
    (["--n", "4096", "--d-model", "16384", "--heads", "128", "--kv-heads", "8", "--mla", "512,64", "--bytes", "2"],
     dict(n=4096, d_model=16384, heads=128, kv_heads=8, mla=(512, 64), bytes=2)),
    (["--model", "tests/models/gemma2", "--n", "4096"], dict(n=4096, model=str(SOURCE / "tests/models/gemma2"))),
]


@pytest.mark.parametrize("args, kwargs", COSTS, ids=["mha", "gqa", "sparse", "mla", "model"])
def test_cost_equals_the_cli_in_each_format(args: list[str], kwargs: dict) -> None:
    report = attn_trace.cost(**kwargs)
    if "model" in kwargs:  # the CLI names the directory as given
        args = ["--model", kwargs["model"], *args[2:]]
    assert str(report) == cli("cost", *args)
    assert report.render("json") == cli("cost", *args, "--format", "json")
    assert report.json == json.loads(report.render("json")) and report.svg is None


def test_cost_refusals_are_the_clis() -> None:
    assert str(attn_trace.cost(np.int64(120), d_model=64, heads=4)) == str(attn_trace.cost(120, d_model=64, heads=4))
    with pytest.raises(TypeError):
        attn_trace.cost(120.0, d_model=64)
    with pytest.raises(attn_trace.ProblemError, match="--d-model excludes --model"):
        attn_trace.cost(10, model=str(SOURCE / "tests/models/gemma2"), d_model=16)
    with pytest.raises(ValueError, match="--n 0: expected a whole number of at least 1"):
        attn_trace.cost(0, d_model=8)
    with pytest.raises(attn_trace.ProblemError, match="--mla 5,-1: expected D_C or D_C,D_R"):
        attn_trace.cost(10, d_model=8, mla="5,-1")
    with pytest.raises(attn_trace.ProblemError, match="writes text, json"):
        attn_trace.cost(10, d_model=8).render("latex")


def test_variance_equals_the_cli_with_its_chart(tmp_path: Path) -> None:
    svg = tmp_path / "variance.svg"
    args = ["--dk", "8,32", "--samples", "2000", "--queries", "200", "--seed", "3"]
    report = attn_trace.variance(dk=[8, 32], samples=2000, queries=200, seed=3)
    assert str(report) == cli("variance", *args, "--svg", str(svg))
    assert report.svg == svg.read_text()
    assert report.render("json") == cli("variance", *args, "--format", "json")
    assert [row["d_k"] for row in report.json["rows"]] == [8, 32]


@pytest.mark.parametrize("format", ["text", "json", "markdown", "latex"])
def test_precision_equals_the_cli(format: str, tmp_path: Path) -> None:
    svg = tmp_path / "precision.svg"
    example = "examples/half_overflow.json"
    report = attn_trace.precision(str(SOURCE / example), max_shift=False)
    expected = cli("precision", example, "--no-max-shift", "--format", format, "--svg", str(svg))
    # The CLI names the file as given: compare from the file's name on.
    assert report.render(format).replace(str(SOURCE) + "/", "") == expected
    assert report.svg.replace(str(SOURCE) + "/", "") == svg.read_text()
    assert report._repr_markdown_() == report.render("markdown")


def test_random_writes_the_clis_file_and_runs_to_its_trace(tmp_path: Path) -> None:
    options = ["--n", "5", "--d-model", "6", "--heads", "2", "--kv-heads", "1", "--seed", "7", "--mask", "causal", "--literal"]
    problem = attn_trace.random(n=5, d_model=6, heads=2, kv_heads=1, seed=7, mask="causal", literal=True)
    text = cli("random", *options)
    assert problem.to_json() == text
    assert (problem.n, problem.m, problem.heads, problem.kv_heads, problem.d_model) == (5, 5, 2, 1, 6)
    path = tmp_path / "random.json"
    problem.to_json(path)
    assert path.read_text() == text
    assert str(attn_trace.run(problem)) == cli("run", str(path), "--color", "never")
    assert attn_trace.random(n=65536, dk=64).to_json() == cli("random", "--n", "65536", "--dk", "64")
    with pytest.raises(attn_trace.ProblemError, match="--kv-heads 3 must divide --heads 4"):
        attn_trace.random(heads=4, kv_heads=3)
    with pytest.raises(attn_trace.ProblemError, match="--dist 'gaussian': expected one of normal, uniform, integers"):
        attn_trace.random(dist="gaussian")


def test_load_checks_once_and_every_command_takes_the_problem(tmp_path: Path) -> None:
    problem = attn_trace.load(DAMAGED)
    assert (problem.n, problem.m, problem.d_k, problem.tokens) == (3, 3, 2, ["damaged", "on", "arrival"])
    assert "damaged on arrival" in repr(problem)
    assert problem.to_json() == DAMAGED.read_text()
    assert attn_trace.check(problem).passed == 1
    causal = attn_trace.run(problem, mask="causal")
    assert np.array_equal(causal["weights"], attn_trace.run(DAMAGED, mask="causal")["weights"])
    arrays = attn_trace.load(Q=[[1.0, 0.0]], K=[[1.0, 0.0], [0.0, 1.0]], V=[[1.0, 2.0], [3.0, 4.0]])
    assert json.loads(arrays.to_json())["Q"] == [[1.0, 0.0]]
    assert str(attn_trace.run(arrays)) == str(attn_trace.run(json.loads(arrays.to_json())))
    with pytest.raises(attn_trace.ProblemError, match="V"):
        attn_trace.load(Q=[[1.0, 0.0]], K=[[1.0, 0.0]])
    with pytest.raises(attn_trace.ProblemError, match="check reads problem files"):
        attn_trace.check(arrays)
    # Read once: another working directory and a later edit of the file change nothing.
    copy = tmp_path / "copy.json"
    copy.write_text(DAMAGED.read_text())
    os.chdir(tmp_path)
    loaded = attn_trace.load("copy.json")
    copy.write_text("{}")
    os.chdir(SOURCE)
    assert str(attn_trace.run(loaded)) == str(attn_trace.run(problem)).replace(str(DAMAGED), str(copy))
    assert loaded.to_json() == DAMAGED.read_text()
    with pytest.raises(attn_trace.ProblemError, match="cannot open the problem file"):
        attn_trace.load(tmp_path / "missing.json")
    # A problem with infinities loaded with allow_nonfinite keeps it for the commands.
    infinite = attn_trace.load({"Q": [[1.0, 0.0]], "K": [[1.0, 0.0]], "V": [["inf", 0.0]]}, allow_nonfinite=True)
    assert np.isinf(attn_trace.run(infinite)["out"]).any()


def test_view_equals_the_cli() -> None:
    files = [str(SOURCE / "tests/models/gpt2_directory" / name) for name in ("problem_layer0.json", "problem.json")]
    report = attn_trace.view(*files, precision=2)
    assert str(report) == cli("view", *files, "--precision", "2")
    assert report.render("json") == cli("view", *files, "--format", "json")
    # The page, but for how it names a dot product's arithmetic: the Python call, not the command.
    page = cli("view", *files, "--format", "html", "--precision", "2")
    python_explain = 'attn_trace.explain(\\"{file}\\", cell=\\"{cell}\\", head={head})'
    assert report.render("html") == page.replace('attn-trace explain {file} --cell {cell} --head {head}', python_explain)
    assert report._repr_html_().startswith('<iframe class="attn-trace" srcdoc=')
    assert [layer["layer"] for layer in report.json["layers"]] == [0, 1]
    with pytest.raises(attn_trace.ProblemError, match="differ from"):
        attn_trace.view(files[0], SOURCE / "tests/models/bert_directory/problem.json")


def test_standalone_latex_is_the_clis_for_every_front() -> None:
    """standalone=True is --standalone (docs/COMMANDS.md#output-formats): the same whole
    document from a trace, an explanation, a worksheet and a report; refused with any
    format but LaTeX, in the CLI's words."""
    damaged = str(DAMAGED)
    pairs = [
        (attn_trace.run(damaged).render("latex", standalone=True), ["run", damaged]),
        (str(attn_trace.explain(damaged, row="weights[1]", format="latex", standalone=True)),
         ["explain", damaged, "--row", "weights[1]"]),
        (str(attn_trace.exercise("kv-cache", seed=2, part="answers", format="latex", standalone=True)),
         ["exercise", "--topic", "kv-cache", "--seed", "2", "--part", "answers"]),
        (attn_trace.precision(damaged).render("latex", standalone=True), ["precision", damaged]),
    ]
    for document, args in pairs:
        assert document.startswith("\\documentclass{article}\n\\usepackage{amsmath}\n\\begin{document}\n")
        assert document.endswith("\\end{document}\n")
        assert document == cli(*args, "--format", "latex", "--standalone")
    for refused in (lambda: attn_trace.run(damaged).render("markdown", standalone=True),
                    lambda: attn_trace.precision(damaged).render("text", standalone=True),
                    lambda: attn_trace.exercise("softmax", standalone=True)):
        with pytest.raises(attn_trace.ProblemError, match="it needs --format latex, not (markdown|text)"):
            refused()
