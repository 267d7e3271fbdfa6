"""Whole models (docs/PYTHON.md#whole-models) without torch: trace_model's layer-tracing
half (attn_trace._model.trace_layers) on the hidden states transformers saved in
tests/models/gpt2_directory, the model read in memory (config.json's text and the
safetensors' bytes, never a path), against the goldens' weights and the directory route's
trace; the model view page it draws; trace_model's refusals that come before torch. The
hook half runs end to end in tools/trace_model_families.py (torch and transformers)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

import attn_trace
from attn_trace import _core
from attn_trace._model import trace_layers
from browser_check import run_browser_script

SOURCE = Path(os.environ.get("SOURCE_DIR", Path(__file__).resolve().parents[2]))
GPT2 = SOURCE / "tests" / "models" / "gpt2_directory"
TOKENS = json.loads((GPT2 / "problem.json").read_text())["tokens"]


def held_gpt2():
    return _core.hold_model("tiny-gpt2", (GPT2 / "config.json").read_text(), (GPT2 / "model.safetensors").read_bytes())


def traced(dtype="f64", special=None):
    hidden = {0: np.load(GPT2 / "hidden_layer0.npy")[None], 1: np.load(GPT2 / "hidden.npy")[None]}
    return trace_layers("tiny-gpt2", held_gpt2(), hidden, [TOKENS], [special or [False] * len(TOKENS)], dtype)


def golden_weights(name):
    return np.array(next(e for e in json.loads((GPT2 / name).read_text())["expect"] if e["name"] == "weights")["data"])


def test_layers_equal_transformers_and_the_directory_route():
    mt = traced()
    assert mt.layers == [0, 1]
    assert mt.weights.shape == (2, 1, 4, len(TOKENS), len(TOKENS))
    # transformers' own weights (head 0, float32) and the directory route's trace, bit for bit.
    for k, name in enumerate(("problem_layer0.json", "problem.json")):
        np.testing.assert_allclose(mt.weights[k, 0, 0], golden_weights(name), atol=1e-5, rtol=0)
        directory = attn_trace.run(GPT2 / name)
        assert np.array_equal(mt[k]["weights"], directory["weights"])
        assert np.array_equal(mt[k]["final"], directory["final"])
    assert mt.tokens == TOKENS
    np.testing.assert_allclose(mt.weights.sum(axis=-1), 1, atol=1e-12)


def test_a_padded_batch_traces_each_sequence_to_its_length():
    hidden = np.load(GPT2 / "hidden.npy")
    batch = np.zeros((2, len(TOKENS), hidden.shape[1]))
    batch[0], batch[1, :4] = hidden, hidden[:4]
    mt = trace_layers("tiny-gpt2", held_gpt2(), {1: batch}, [TOKENS, TOKENS[:4]], [[False] * 7, [False] * 4], "f64")
    assert mt.lengths == [7, 4]
    assert isinstance(mt[1], tuple) and len(mt[1]) == 2
    # Causal: the first 4 tokens' weights do not depend on what follows them; the padding is 0.
    np.testing.assert_array_equal(mt.weights[0, 1, :, :4, :4], mt.weights[0, 0, :, :4, :4])
    assert not mt.weights[0, 1, :, 4:, :].any() and not mt.weights[0, 1, :, :, 4:].any()


def test_problem_explains_a_cell_from_the_model_in_memory():
    mt = traced()
    text = attn_trace.explain(mt.problem(1), cell="scores[2,1]", head=3)
    score = mt[1]["scores"][0, 3, 2, 1]
    assert text.startswith("scores[2,1], head 3"), text
    assert f"= {score:.4f}\n" in text


def test_the_page():
    mt = traced(dtype="f32", special=[True] + [False] * (len(TOKENS) - 1))
    page = mt.render("html")
    cells = re.findall(r'<canvas data-layer="(\d+)" data-head="(\d+)"', page)
    assert cells == [(str(layer), str(head)) for layer in (0, 1) for head in range(4)]
    data = json.loads(re.search(r'<script type="application/json" id="model-data">(.*?)</script>', page, re.S).group(1))
    assert data["special"] == [True] + [False] * (len(TOKENS) - 1)
    assert data["explain"] == 'attn_trace.explain(mt.problem({layer}), cell="{cell}", head={head})'
    assert data["queries"] == TOKENS
    weights = next(s for s in data["layers"][1]["heads"][2]["steps"] if s["name"] == "weights")
    assert weights["type"] == "f4"  # an f32 trace: its values are float32, 8 hex digits each
    decoded = np.frombuffer(bytes.fromhex(weights["hex"]), dtype="<f4").reshape(len(TOKENS), len(TOKENS))
    assert np.array_equal(decoded, mt[1]["weights"][0, 2])
    assert 'id="special" checked' in page
    assert 'id="special" checked' not in mt.render("html", hide_special=True)
    assert 'id="special"' not in traced().render("html")  # no special tokens, no control
    assert mt._repr_html_().startswith('<iframe class="attn-trace" srcdoc=')
    with pytest.raises(attn_trace.ProblemError, match="a ModelTrace renders html"):
        mt.render("text")
    with pytest.raises(KeyError, match=r"the traced layers are \[0, 1\]"):
        mt[5]


def test_a_model_in_memory_is_checked_as_a_file_is():
    with pytest.raises(attn_trace.ProblemError, match=r"tiny \(in memory\)/model\.safetensors"):
        _core.hold_model("tiny", "{}", b"\x08\x00\x00\x00\x00\x00\x00\x00{}")
    held = _core.hold_model("tiny", '{"model_type": "gpt2"', (GPT2 / "model.safetensors").read_bytes())
    problem = json.dumps({"checkpoint": {"model": "tiny", "layer": 0}, "X": [[0.0] * 16]})
    with pytest.raises(attn_trace.ProblemError, match=r"tiny \(in memory\)/config\.json"):
        _core.load(text=problem, label="<memory>", model=held)


def test_trace_model_names_what_it_needs():
    with pytest.raises(attn_trace.ProblemError, match="text=… \\(with tokenizer=…\\) or ids=…"):
        attn_trace.trace_model("model")
    with pytest.raises(attn_trace.ProblemError, match="without a tokenizer give the ids: ids="):
        attn_trace.trace_model("model", text="the cat sat")


def test_the_special_tokens_hide_in_a_browser(tmp_path: Path) -> None:
    """The page's control in headless chromium (tests/browser/model_view_special.py).
    Skipped without chromium, unless ATTN_TRACE_REQUIRE_BROWSER=1 (CI)."""
    page = tmp_path / "model.html"
    page.write_text(traced(dtype="f32", special=[True] + [False] * (len(TOKENS) - 1)).render("html", hide_special=True), encoding="utf-8")
    run_browser_script("model_view_special.py", str(page), str(len(TOKENS)))
