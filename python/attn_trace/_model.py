"""A whole Hugging Face model traced (docs/PYTHON.md#whole-models): one forward pass in
eager attention with hooks that catch every attention layer's input, then each layer
traced by attn-trace from the model's own configuration and weights, read in memory as a
model directory's are (docs/PROBLEM.md#a-model-directory-checkpointmodel). transformers
and torch are imported here only: the rest of the package never needs them."""

from __future__ import annotations

import json
import os
import re
from typing import Any

import numpy as np

from . import _core
from ._calls import _call, _problem_options
from ._errors import ProblemError
from ._problem import Problem
from ._trace import Trace, framed

# Where each family keeps a layer's attention module, the one whose hidden_states argument
# is the layer's attention input (after the input norm): model_type → the module's name
# after the layer's index. The rest (llama, mistral, qwen2, qwen3, olmo2, gemma2, gemma3,
# phi3, deepseek_v3) call it self_attn.
ATTENTION_MODULES = {"gpt2": "attn", "bloom": "self_attention", "gpt_neox": "attention", "bert": "attention.self"}
# The containers whose children are the layers, by their index: model.layers.3, transformer.h.3, encoder.layer.3.
LAYER_PATH = re.compile(r"(?:^|\.)(?:layers|h|layer)\.(\d+)\.")


def _torch():
    try:
        import torch
        import transformers
    except ImportError as error:  # an optional dependency: named, with how to get it
        raise ProblemError(f"trace_model needs torch and transformers ({error.name} is not installed): "
                           "pip install torch transformers") from None
    return torch, transformers


def _load(model: Any, transformers: Any) -> Any:
    """A loaded model as it is; a directory save_pretrained wrote, loaded in eager attention
    (BERT: AutoModel, the encoder; else AutoModelForCausalLM)."""
    if not isinstance(model, (str, os.PathLike)):
        return model
    path = os.fspath(model)
    if not os.path.isfile(os.path.join(path, "config.json")):
        raise ProblemError(f"{path}: no config.json (give a directory save_pretrained wrote, or a loaded model)")
    config = transformers.AutoConfig.from_pretrained(path)
    auto = transformers.AutoModel if config.model_type == "bert" else transformers.AutoModelForCausalLM
    return auto.from_pretrained(path, attn_implementation="eager")


def _text_config(model: Any) -> Any:
    return getattr(model.config, "text_config", None) or model.config


def _attention_modules(model: Any) -> dict[int, Any]:
    """Layer index → the attention module whose input is that layer's attention input."""
    kind = _text_config(model).model_type
    suffix = ATTENTION_MODULES.get(kind, "self_attn")
    found = {}
    for name, module in model.named_modules():
        layer = LAYER_PATH.search(name)
        if layer and name.endswith(f".{layer.group(1)}.{suffix}") and "vision" not in name:
            found[int(layer.group(1))] = module
    if not found:
        raise ProblemError(f"{kind}: no attention modules named …layers.L.{suffix} in the model: trace_model knows llama, mistral, "
                           "qwen2, qwen3, olmo2, gemma2, gemma3, phi3, gpt_neox, bloom, deepseek_v3, gpt2 and bert")
    return found


def _check_inputs(text: Any, ids: Any, tokenizer: Any) -> None:
    if (text is None) == (ids is None):
        raise ProblemError("trace_model needs text=… (with tokenizer=…) or ids=…, one of them")
    if text is not None and tokenizer is None:
        raise ProblemError("text= needs tokenizer=… to turn it into token ids; without a tokenizer give the ids: ids=[[12, 7, 99]]")


def _inputs(text: Any, ids: Any, tokenizer: Any, torch: Any) -> tuple[Any, Any, list[int]]:
    """(ids (batch, n), attention mask (batch, n), lengths): texts padded on the right, as
    every sequence then starts at position 0."""
    if text is not None:
        texts = [text] if isinstance(text, str) else list(text)
        side, pad = tokenizer.padding_side, tokenizer.pad_token
        tokenizer.padding_side = "right"
        if pad is None and len(texts) > 1:
            tokenizer.pad_token = tokenizer.eos_token  # GPT-2 has none; padded keys are masked either way
        try:
            encoded = tokenizer(texts, return_tensors="pt", padding=True)
        finally:
            tokenizer.padding_side, tokenizer.pad_token = side, pad
        mask = encoded.get("attention_mask", torch.ones_like(encoded["input_ids"]))
        return encoded["input_ids"], mask, [int(n) for n in mask.sum(dim=1)]
    rows = ids.tolist() if hasattr(ids, "tolist") else list(ids)
    rows = [rows] if rows and not isinstance(rows[0], (list, tuple)) else [list(r) for r in rows]
    if not rows or any(not r for r in rows):
        raise ProblemError("ids=: give token ids, e.g. [12, 7, 99] or one list per sequence")
    width = max(len(r) for r in rows)
    padded = torch.tensor([r + [0] * (width - len(r)) for r in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
    return padded, mask, [len(r) for r in rows]


def _layer_tensors(model: Any, layers: list[int]) -> dict[str, Any]:
    """The state dict's tensors of the traced layers, as they are (their dtype, their names)."""
    wanted = set(layers)
    out = {}
    for name, tensor in model.state_dict().items():
        layer = LAYER_PATH.search(name)
        if layer and int(layer.group(1)) in wanted and "vision" not in name:
            out[name] = tensor.detach().to("cpu").contiguous().clone()  # clone: no storage shared between two names
    return out


class ModelTrace:
    """What ``trace_model`` returns (docs/PYTHON.md#whole-models). ``mt[layer]`` is that
    layer's Trace (a tuple of them, one per sequence, for a batch), keyed by the model's
    layer index; ``layers`` the traced indices; ``weights`` (layers, batch, heads, n, n);
    ``attentions`` transformers' ``output_attentions`` tuple in shape (torch tensors), for
    bertviz; ``tokens`` the token strings (one list per sequence for a batch);
    ``lengths`` each sequence's length (a padded batch's padding is not traced: its rows
    and columns are 0 in ``weights``); ``special`` which tokens are the tokenizer's
    special ones."""

    def __init__(self, name: str, layers: list[int], problems: dict[int, list[Problem]], traces: dict[int, list[Trace]],
                 tokens: list[list[str]], lengths: list[int], special: list[list[bool]]):
        self.name = name
        self.layers = layers
        self._problems = problems
        self._traces = traces
        heads = traces[layers[0]][0]._result.heads
        self.lengths = lengths
        self.tokens = tokens[0] if len(tokens) == 1 else tokens
        self.special = special[0] if len(special) == 1 else special
        n = max(lengths)
        self.weights = np.zeros((len(layers), len(lengths), heads, n, n))
        for k, layer in enumerate(layers):
            for b, trace in enumerate(traces[layer]):
                w = trace["weights"]  # (1, heads, len, len)
                self.weights[k, b, :, :lengths[b], :lengths[b]] = w[0]

    @property
    def attentions(self) -> tuple[Any, ...]:
        """transformers' output_attentions in shape: one (batch, heads, n, n) torch tensor a
        traced layer, what bertviz's head_view and model_view take."""
        torch, _ = _torch()
        return tuple(torch.from_numpy(self.weights[k]) for k in range(len(self.layers)))

    def __getitem__(self, layer: int) -> Trace | tuple[Trace, ...]:
        if layer not in self._traces:
            raise KeyError(f"layer {layer} was not traced: the traced layers are {self.layers}")
        found = self._traces[layer]
        return found[0] if len(found) == 1 else tuple(found)

    def problem(self, layer: int, sequence: int = 0) -> Problem:
        """The problem layer ``layer`` of sequence ``sequence`` was traced from: every command
        takes it (``attn_trace.explain(mt.problem(3), cell="scores[2,1]", head=5)``), its
        weights read from the model in memory."""
        self[layer]  # a KeyError naming the traced layers
        return self._problems[layer][sequence]

    def render(self, format: str = "html", *, sequence: int = 0, precision: int = 4, hide_special: bool = False) -> str:
        """The model view page (docs/COMMANDS.md#the-model-view-page) of one sequence, as
        ``attn-trace view --format html`` draws it; ``hide_special`` opens it with the
        special tokens' rows and columns hidden in the grid."""
        if format != "html":
            raise ProblemError(f"format {format}: a ModelTrace renders html (each layer's Trace renders the rest)")
        if not 0 <= sequence < len(self.lengths):
            raise ProblemError(f"sequence {sequence}: the batch has sequences 0..{len(self.lengths) - 1}")
        special = self.special if len(self.lengths) == 1 else self.special[sequence]
        explain = ('attn_trace.explain(mt.problem({layer}' + ('' if len(self.lengths) == 1 else f', {sequence}') +
                   '), cell="{cell}", head={head})')
        return _core.model_page([self._traces[layer][sequence]._result for layer in self.layers], self.layers, self.name,
                                list(special), precision, explain, hide_special)

    def __repr__(self) -> str:
        return (f"<attn_trace.ModelTrace {self.name}: layers {self.layers}, {len(self.lengths)} sequence"
                f"{'' if len(self.lengths) == 1 else 's'} of {self.lengths} tokens>")

    def _repr_html_(self) -> str:
        return framed(self.render("html"))


def trace_model(model: Any, text: str | list[str] | None = None, ids: Any = None, tokenizer: Any = None,
                layers: list[int] | None = None, *, backend: str = "cpu", max_memory: int | str = "4G") -> ModelTrace:
    """Every attention layer of a Hugging Face model on a text, each traced by attn-trace
    (docs/PYTHON.md#whole-models). ``model`` is a loaded transformers model or a directory
    ``save_pretrained`` wrote; ``text`` (a string or a list, with ``tokenizer``) or ``ids``
    (a list, or one list per sequence); ``layers`` the layer indices (default all)."""
    _check_inputs(text, ids, tokenizer)
    torch, transformers = _torch()
    model = _load(model, transformers)
    config = model.config
    attention = getattr(config, "_attn_implementation", "eager")
    if attention != "eager" and not hasattr(model, "set_attn_implementation"):
        raise ProblemError("the model does not run in eager attention: load it with attn_implementation=\"eager\"")
    modules = _attention_modules(model)
    chosen = sorted(modules) if layers is None else [int(layer) for layer in layers]
    for layer in chosen:
        if layer not in modules:
            raise ProblemError(f"layer {layer}: the model has layers {min(modules)}..{max(modules)}")
    input_ids, mask, lengths = _inputs(text, ids, tokenizer, torch)
    vocab = _text_config(model).vocab_size
    if int(input_ids.min()) < 0 or int(input_ids.max()) >= vocab:
        raise ProblemError(f"token ids: each must lie in 0..{vocab - 1} (the model's vocab_size is {vocab})")

    seen: dict[int, Any] = {}

    def catcher(layer: int) -> Any:
        def pre(_: Any, args: tuple, kwargs: dict) -> None:
            seen[layer] = (args[0] if args else kwargs["hidden_states"]).detach()
        return pre

    hooks = [modules[layer].register_forward_pre_hook(catcher(layer), with_kwargs=True) for layer in chosen]
    try:
        if attention != "eager":
            model.set_attn_implementation("eager")  # what transformers' output_attentions are computed by; put back below
        with torch.no_grad():
            kwargs = {"input_ids": input_ids.to(model.device), "attention_mask": mask.to(model.device)}
            if _text_config(model).model_type != "bert":
                kwargs["use_cache"] = False
            model(**kwargs)
    finally:
        for hook in hooks:
            hook.remove()
        if attention != "eager":
            model.set_attn_implementation(attention)

    # The traced layers' tensors as one safetensors file in memory (never on disk), read by
    # the model-directory reader under the model's name.
    from safetensors.torch import save

    name = getattr(config, "name_or_path", "") or type(model).__name__
    name = os.path.basename(os.path.normpath(name)) or type(model).__name__
    held = _core.hold_model(name, config.to_json_string(use_diff=False), save(_layer_tensors(model, chosen)))
    dtype = "f64" if next(model.parameters()).dtype == torch.float64 else "f32"
    rows = input_ids.tolist()
    hidden = {layer: seen[layer].to("cpu", torch.float64).numpy() for layer in chosen}  # float64 holds float32, bf16 and f16 exactly
    if tokenizer is not None:
        tokens = [[tokenizer.decode([i]) for i in row[:n]] for row, n in zip(rows, lengths)]
        specials = set(getattr(tokenizer, "all_special_ids", []))
    else:
        tokens = [[str(i) for i in row[:n]] for row, n in zip(rows, lengths)]
        specials = set()
    special = [[i in specials for i in row[:n]] for row, n in zip(rows, lengths)]
    return trace_layers(name, held, hidden, tokens, special, dtype, backend, max_memory)


def trace_layers(name: str, held: Any, hidden: dict[int, np.ndarray], tokens: list[list[str]], special: list[list[bool]],
                 dtype: str, backend: str = "cpu", max_memory: int | str = "4G") -> ModelTrace:
    """trace_model's second half, without torch: each layer's attention input (batch, n, d)
    traced from the model held in memory (_core.hold_model), each sequence its own length."""
    chosen = sorted(hidden)
    lengths = [len(t) for t in tokens]
    problems: dict[int, list[Problem]] = {}
    traces: dict[int, list[Trace]] = {}
    options = _problem_options(None, None, None, None, None, backend, max_memory, False)
    for layer in chosen:
        problems[layer], traces[layer] = [], []
        for b, n in enumerate(lengths):
            x = hidden[layer][b, :n]
            text = json.dumps({"title": f"{name}, layer {layer}" + (f", sequence {b}" if len(lengths) > 1 else ""), "tokens": tokens[b],
                               "checkpoint": {"model": name, "layer": layer}, "X": x.tolist(), "dtype": dtype})
            source = {"text": text, "label": f"{name} (in memory), layer {layer}", "model": held}
            problem = Problem(source, _core.load(**source), None)
            problems[layer].append(problem)
            traces[layer].append(Trace(_call(_core.run, problem, {}, dict(options, fast=False, pitfall=""))))
    return ModelTrace(name, chosen, problems, traces, tokens, lengths, special)
