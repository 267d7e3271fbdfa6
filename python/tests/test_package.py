"""The Python front against the CLI it mirrors (docs/PYTHON.md): the same bytes for the
same problem and options, arrays in PyTorch's layout equal to the CLI's JSON, the CLI's
errors as exceptions."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import attn_trace

SOURCE = Path(os.environ.get("SOURCE_DIR", Path(__file__).resolve().parents[2]))
BINARY = os.environ.get("ATTN_TRACE", str(SOURCE / "build" / "attn-trace"))
EXAMPLES = sorted((SOURCE / "examples").glob("*.json"))
DAMAGED = SOURCE / "examples" / "damaged_on_arrival.json"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([BINARY, *args, ], cwd=SOURCE, capture_output=True, text=True)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_run_in_every_format_equals_the_cli_bytes(example: Path) -> None:
    os.chdir(SOURCE)
    name = str(example.relative_to(SOURCE))
    expected = cli("run", name, "--color", "never")
    if expected.returncode != 0:
        with pytest.raises(attn_trace.Error) as error:
            attn_trace.run(str(example))
        assert expected.stderr.strip() == f"attn-trace: error: {error.value}".replace(str(example), name)
        assert error.value.exit_code == expected.returncode
        return
    trace = attn_trace.run(name)
    assert trace.render("text") == expected.stdout
    # csv writes one step: the weights, where the example has them.
    for format, options in [("json", []), ("markdown", []), ("latex", []), ("html", []), ("csv", ["--steps", "weights"])]:
        expected = cli("run", name, "--format", format, *options)
        if expected.returncode != 0:  # a format this example cannot take (csv of a fast-path run): the same refusal
            with pytest.raises(attn_trace.ProblemError, match="."):
                trace.render(format, steps=options[1:])
            continue
        assert trace.render(format, steps=options[1:]) == expected.stdout, format


@pytest.mark.parametrize("format", ["text", "json", "markdown", "latex", "html"])
def test_every_format_and_output_option_equals_the_cli(format: str) -> None:
    os.chdir(SOURCE)
    problem = "examples/damaged_on_arrival.json"
    expected = cli("run", problem, "--mask", "causal", "--format", format, "--steps", "scores,weights,out", "--precision", "3", "--color", "never")
    assert expected.returncode == 0, expected.stderr
    trace = attn_trace.run(problem, mask="causal")
    assert trace.render(format, steps="scores,weights,out", precision=3) == expected.stdout


@pytest.mark.parametrize("command,options,python", [
    (["decode", "--prefill", "1"], {}, lambda p: attn_trace.decode(p, prefill=1)),
    (["tiled", "--block-q", "1", "--block-k", "2"], {}, lambda p: attn_trace.tiled(p, block_q=1, block_k=2)),
])
def test_decode_and_tiled_equal_the_cli(command, options, python) -> None:
    os.chdir(SOURCE)
    problem = "examples/damaged_on_arrival.json"
    for format in ("text", "json"):
        expected = cli(command[0], problem, *command[1:], "--format", format, "--color", "never")
        assert expected.returncode == 0, expected.stderr
        assert python(problem).render(format) == expected.stdout


def test_str_is_the_text_output() -> None:
    os.chdir(SOURCE)
    assert str(attn_trace.run("examples/damaged_on_arrival.json")) == cli("run", "examples/damaged_on_arrival.json", "--color", "never").stdout


def test_weights_in_pytorchs_layout_equal_the_cli_json() -> None:
    trace = attn_trace.run(str(SOURCE / "examples" / "gqa_8q_2kv.json"))
    golden = json.loads(cli("run", "examples/gqa_8q_2kv.json", "--format", "json").stdout)
    weights = trace["weights"]
    assert weights.shape[:2] == (1, 8) and weights.dtype == np.float64
    for step in golden["steps"]:
        if step["name"] == "weights":
            np.testing.assert_array_equal(weights[0, step["head"]], np.array(step["data"]))
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=0, atol=1e-12)  # rows sum to 1
    # A problem-level step (k: the KV heads side by side, (n, H_kv · d_k)) is one matrix.
    k = next(step for step in golden["steps"] if step["name"] == "k")
    np.testing.assert_array_equal(trace["k"], np.array(k["data"]))
    step = trace.steps["weights"]
    assert step.symbol == "A" and step.shape == (weights.shape[2], weights.shape[3])


def test_causal_weights_are_exactly_zero_above_the_diagonal() -> None:
    weights = attn_trace.run(str(DAMAGED), mask="causal")["weights"][0, 0]
    assert weights[0, 1] == 0 and weights[0, 2] == 0 and weights[1, 2] == 0
    np.testing.assert_allclose(weights[2], [0.5035, 0.2483, 0.2483], atol=5e-5)  # README's worked example


def test_arrays_lists_dicts_and_json_give_one_trace() -> None:
    q = np.array([[1.0, 0.0], [0.5, 0.5]])
    k = [[1, 0], [0, 1], [1, 1]]
    v = np.arange(6, dtype=np.float32).reshape(3, 2)
    by_arrays = attn_trace.run(Q=q, K=k, V=v, mask="causal")
    by_dict = attn_trace.run({"Q": q.tolist(), "K": k, "V": v.tolist(), "mask": "causal"})
    by_json = attn_trace.run(json.dumps({"Q": q.tolist(), "K": k, "V": v.tolist(), "mask": "causal"}))
    np.testing.assert_array_equal(by_arrays["out"], by_dict["out"])
    np.testing.assert_array_equal(by_arrays["out"], by_json["out"])
    # softmax over s · q kᵀ by hand (s = 1/√2), top-left causal as the mask file's "causal".
    s = q @ np.array(k, dtype=float).T / np.sqrt(2)
    s[np.triu_indices(2, 1, 3)] = -np.inf
    a = np.exp(s - s.max(axis=1, keepdims=True))
    a /= a.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(by_arrays["out"][0, 0], a @ v, rtol=1e-12)


def test_dlpack_arrays_are_read() -> None:
    class Tensor:  # a torch-like tensor that numpy reads only through __dlpack__
        def __init__(self, array):
            self._array = array

        def __dlpack__(self, **kwargs):
            return self._array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self._array.__dlpack_device__()

    q = np.array([[1.0, 2.0]])
    trace = attn_trace.run(Q=Tensor(q), K=Tensor(q), V=Tensor(q))
    np.testing.assert_array_equal(trace["out"][0, 0], q)


def test_model_problem_with_mask_none_keeps_its_window() -> None:
    trace = attn_trace.run(str(SOURCE / "tests/models/mistral_window/problem.json"), mask="none")
    assert "mask = causal + window:3," in str(trace)
    weights = trace["weights"][0, 0]
    assert (weights[6, :4] == 0).all() and (weights[6, 4:] > 0).all()


def test_errors_carry_the_clis_message_and_exit_code() -> None:
    os.chdir(SOURCE)
    expected = cli("run", "examples/damaged_on_arrival.json", "--mask", "casual")
    with pytest.raises(attn_trace.ProblemError) as error:
        attn_trace.run("examples/damaged_on_arrival.json", mask="casual")
    assert isinstance(error.value, ValueError) and error.value.exit_code == expected.returncode == 2
    assert expected.stderr == f"attn-trace: error: {error.value}\n"
    with pytest.raises(attn_trace.ProblemError, match="cannot open the problem file"):
        attn_trace.run("no/such/file.json")
    with pytest.raises(attn_trace.ProblemError, match="max_memory"):
        attn_trace.run("examples/damaged_on_arrival.json", max_memory="lots")
    with pytest.raises(attn_trace.BackendUnavailable):
        attn_trace.run("examples/damaged_on_arrival.json", backend="cuda")
    with pytest.raises(attn_trace.ProblemError, match="not both"):
        attn_trace.run("examples/damaged_on_arrival.json", Q=[[1.0]])


def test_explain_equals_the_cli() -> None:
    os.chdir(SOURCE)
    for format in ("text", "markdown"):
        expected = cli("explain", "examples/damaged_on_arrival.json", "--cell", "weights[2,1]", "--mask", "causal", "--format", format)
        text = attn_trace.explain("examples/damaged_on_arrival.json", cell="weights[2,1]", mask="causal", format=format)
        assert text == expected.stdout
    assert "weights" in attn_trace.explain("examples/damaged_on_arrival.json", row="weights[1]")._repr_markdown_()


def test_a_notebook_shows_the_page_in_a_frame_of_its_own() -> None:
    trace = attn_trace.run(str(DAMAGED))
    frame = trace._repr_html_()
    assert frame.startswith('<iframe class="attn-trace" srcdoc="') and "sandbox=" in frame
    assert "<script" not in frame  # escaped inside srcdoc: it runs in the frame only


def test_the_version_is_the_clis() -> None:
    first_line = subprocess.run([BINARY, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    assert first_line == f"attn-trace {attn_trace.__version__}"


def test_ctrl_c_interrupts_within_a_second(tmp_path: Path) -> None:
    # A run that takes several seconds (the full trace of n = 1500 with 8 heads), interrupted.
    script = tmp_path / "long.py"
    script.write_text(textwrap.dedent("""
        import sys, time, attn_trace
        print("started", flush=True)
        start = time.monotonic()
        try:
            attn_trace.run({"Q": {"random": {"shape": [1500, 64], "seed": 1}}, "K": {"random": {"shape": [1500, 64], "seed": 2}},
                            "V": {"random": {"shape": [1500, 64], "seed": 3}}, "heads": 8}, dtype="f32")
            print("finished", flush=True)
        except KeyboardInterrupt:
            print(f"interrupted {time.monotonic() - start:.2f}", flush=True)
    """))
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=os.environ)
    assert child.stdout.readline().strip() == "started"
    import time
    time.sleep(0.5)
    sent = time.monotonic()
    child.send_signal(signal.SIGINT)
    line = child.stdout.readline().strip()
    waited = time.monotonic() - sent
    child.kill()
    assert line.startswith("interrupted"), line
    assert waited < 1.0


@pytest.mark.parametrize("args,call", [
    (["grad"], lambda p: attn_trace.grad(p)),
    (["grad", "--tiled"], lambda p: attn_trace.grad(p, tiled=True)),
    (["grad", "--fast", "--d-out", "random:3"], lambda p: attn_trace.grad(p, fast=True, d_out="random:3")),
    (["permute", "--perm", "2,0,1"], lambda p: attn_trace.permute(p, perm=[2, 0, 1])),
    (["permute", "--seed", "4"], lambda p: attn_trace.permute(p, seed=4)),
])
def test_grad_and_permute_equal_the_cli(args, call) -> None:
    os.chdir(SOURCE)
    problem = "examples/damaged_on_arrival.json"
    trace = call(problem)
    for format in ("text", "json"):
        expected = cli(args[0], problem, *args[1:], "--format", format, "--color", "never")
        assert trace.render(format) == expected.stdout


def test_grad_page_equals_the_cli() -> None:
    os.chdir(SOURCE)
    expected = cli("grad", "examples/damaged_on_arrival.json", "--mask", "causal", "--format", "html")
    assert attn_trace.grad("examples/damaged_on_arrival.json", mask="causal").render("html") == expected.stdout


def test_check_returns_its_result_and_the_clis_text(tmp_path: Path) -> None:
    os.chdir(SOURCE)
    examples = [str(p.relative_to(SOURCE)) for p in EXAMPLES]
    expected = cli("check", *examples)
    result = attn_trace.check(*examples)
    assert str(result) == expected.stdout and result.exit_code == expected.returncode
    assert result.passed + result.failed == len(examples)
    # A wrong expectation is a result, not an error: exit code 1, the differing step named.
    problem = json.loads(DAMAGED.read_text())
    problem["mask"] = "causal"
    problem["expect"] = [{"name": "weights", "head": 0, "data": [[1, 0, 0], [0.5, 0.5, 0], [0.5, 0.25, 0.25]]}]
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps(problem))
    result = attn_trace.check(wrong)
    assert result.exit_code == 1 and not result and result.failed == 1
    assert result.failures[0]["step"] == "weights (head 0)" and result.failures[0]["failed"] == 3
    assert str(result) == cli("check", str(wrong)).stdout
    # A golden with the mask replaced, as check --golden --mask.
    golden = tmp_path / "golden.json"
    golden.write_text(cli("run", "examples/damaged_on_arrival.json", "--mask", "causal", "--format", "json").stdout)
    assert attn_trace.check("examples/damaged_on_arrival.json", golden=golden).exit_code == 0
    replaced = attn_trace.check("examples/damaged_on_arrival.json", golden=golden, mask="none")
    assert replaced.exit_code == 1 and "note: --mask none replaces the golden's mask causal" in str(replaced)
    # A file the CLI cannot read: its line says ERROR, its message (the CLI's standard error) a warning.
    broken = tmp_path / "broken.json"
    broken.write_text('{"Q": [[1, 0]]')
    expected = cli("check", str(broken))
    with pytest.warns(RuntimeWarning) as caught:
        result = attn_trace.check(broken)
    assert [str(w.message) for w in caught] == expected.stderr.splitlines()
    assert str(result) == expected.stdout and result.exit_code == expected.returncode == 2


@pytest.mark.parametrize("format", ["markdown", "latex", "text", "json"])
def test_exercise_equals_the_cli(format: str) -> None:
    expected = cli("exercise", "--topic", "softmax,causal", "--count", "2", "--seed", "3", "--part", "answers", "--format", format)
    sheet = attn_trace.exercise("softmax,causal", count=2, seed=3, part="answers", format=format)
    assert sheet == expected.stdout
    assert (sheet._repr_markdown_() is not None) == (format == "markdown")
