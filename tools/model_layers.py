"""What tools/make_model_goldens.py, tools/make_config_goldens.py and tools/export_layer.py
share: where each model family's attention layer is, how to catch its input and output,
what dtype a checkpoint is stored in, and how to write the problem file attn-trace reads
(docs/PROBLEM.md#real-model-weights-npy-safetensors-checkpoint, #a-model-directory-checkpointmodel).
Needs torch and transformers (generator-side only, never a runtime dependency of
attn-trace)."""

import json
import struct
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
import transformers

# transformers' model_type → attn-trace's checkpoint family (same tensor names), for the
# older `"checkpoint": {"safetensors": FILE, "family": F, "layer": L}` route with heads given.
FAMILIES = {"gpt2": "gpt2", "llama": "llama", "mistral": "llama", "qwen2": "llama", "bert": "bert"}

# The model_type values attn-trace reads from a whole model directory, config.json and all
# (`"checkpoint": {"model": DIR, "layer": L}`). "gemma3" is the multimodal wrapper: its
# text_config is a gemma3_text config and its text layers lie under model.language_model.
# (language_model.model. in checkpoints saved in the older layout).
MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3", "olmo2", "gemma2", "gemma3_text", "gemma3", "phi3", "gpt_neox",
               "bloom", "deepseek_v3", "gpt2", "bert")

# safetensors dtypes of floating tensors → the torch dtype a model stored so runs in here:
# float64 as float64, the rest in float32 (bf16 and f16 widen exactly to float32, and
# attn-trace reads them widened, so the reference stays within float32 rounding of it).
STORED_DTYPES = {"F64": torch.float64, "F32": torch.float32, "BF16": torch.float32, "F16": torch.float32}


def layer_modules(model, family, layer):
    """(module whose input is the layer's hidden states, module whose output is `final`)."""
    if family == "gpt2":
        attn = (model.transformer if hasattr(model, "transformer") else model).h[layer].attn
        return attn, attn
    if family == "llama":
        attn = (model.model if hasattr(model, "model") else model).layers[layer].self_attn
        return attn, attn
    bert = model.bert if hasattr(model, "bert") else model
    attention = bert.encoder.layer[layer].attention
    return attention.self, attention.output.dense  # final = the output dense, before residual and LayerNorm


def capture(module_in, module_out, run, module_weights=None):
    """The hidden states entering module_in, and module_out's output (and the attention
    weights, the second item of module_weights' tuple output; module_weights defaults to
    module_out), during run()."""
    seen = {}

    def pre(_, args, kwargs):
        seen["x"] = (args[0] if args else kwargs["hidden_states"]).detach().clone()

    def post(_, __, output):
        seen["y"] = (output[0] if isinstance(output, tuple) else output).detach().clone()

    def weights(_, __, output):
        if isinstance(output, tuple) and len(output) > 1 and torch.is_tensor(output[1]):
            seen["weights"] = output[1].detach().clone()

    module_weights = module_out if module_weights is None else module_weights
    hooks = [module_in.register_forward_pre_hook(pre, with_kwargs=True), module_out.register_forward_hook(post),
             module_weights.register_forward_hook(weights)]
    with torch.no_grad():
        run()
    for h in hooks:
        h.remove()
    return seen


def attention(model, layer):
    """The attention module of `layer` (GPT-2: attn; BERT: attention.self) in a model of one of MODEL_TYPES (as
    AutoModelForCausalLM loads it; for Gemma 3's multimodal wrapper, its text model): its
    hidden_states argument is the layer's attention input (after the input norm)."""
    kind = model.config.model_type
    if kind == "gpt2":
        return model.transformer.h[layer].attn
    if kind == "bert":
        return model.encoder.layer[layer].attention.self
    if kind == "gpt_neox":
        return model.gpt_neox.layers[layer].attention
    if kind == "bloom":
        return model.transformer.h[layer].self_attention
    inner = model.model.language_model if hasattr(model.model, "language_model") else model.model
    return inner.layers[layer].self_attn


def capture_attention(model, layer, run):
    """capture() of `layer`'s attention module during run(): x its hidden_states input, y
    its output after the output projection, before any residual or norm, and `weights`
    its eager weights. BloomAttention adds the residual inside its forward (dropout_add):
    there y is its `dense` output, before that add."""
    attn = attention(model, layer)
    if model.config.model_type == "bert":  # final: the output dense, before the residual add and LayerNorm
        return capture(attn, model.encoder.layer[layer].attention.output.dense, run, module_weights=attn)
    if model.config.model_type == "bloom":
        seen = capture(attn, attn.dense, run, module_weights=attn)
        if "y" not in seen:
            raise ValueError("BLOOM with pretraining_tp > 1 and slow_but_exact: its dense projection never runs as a module")
        return seen
    return capture(attn, attn, run)


def stored_dtype(model_dir):
    """The torch dtype to run a model directory's checkpoint in (STORED_DTYPES of the dtype
    most of its floating tensors are stored in, read from the safetensors headers of
    model.safetensors or of the shards model.safetensors.index.json names), and that
    safetensors dtype."""
    model_dir = Path(model_dir)
    index = model_dir / "model.safetensors.index.json"
    if index.exists():
        files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
    elif (model_dir / "model.safetensors").exists():
        files = ["model.safetensors"]
    else:
        raise FileNotFoundError(f"{model_dir}: no model.safetensors and no model.safetensors.index.json "
                                "(attn-trace reads safetensors; save the model with safe_serialization=True)")
    counts = Counter()
    for name in files:
        with open(model_dir / name, "rb") as f:
            (length,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(length))
        counts.update(v["dtype"] for k, v in header.items() if k != "__metadata__" and v["dtype"] in STORED_DTYPES)
    if not counts:
        raise ValueError(f"{model_dir}: no F64, F32, BF16 or F16 tensor in {', '.join(files)}")
    kind = counts.most_common(1)[0][0]
    return STORED_DTYPES[kind], kind


@contextmanager
def float32_as_float64():
    """transformers upcasts to float32 in places whatever the model's dtype (RoPE's inverse
    frequencies and angles, the eager softmax's dtype=torch.float32, RMSNorm's
    .to(torch.float32), Gemma's x.float()): for a float64 model that is ~1e-8 from f64
    arithmetic. Inside this context torch.float32 and torch.float name float64,
    Tensor.float() is Tensor.double() and the default dtype is float64, so the same formulas
    run in float64. Load the float64 model outside it (safetensors reads F32 tensors as
    torch.float32), then inside it remake its RoPE (rope_in_float64) and run it."""
    saved = torch.float32, torch.float, torch.Tensor.float, torch.get_default_dtype()
    torch.float32 = torch.float = torch.float64
    torch.Tensor.float = lambda self, memory_format=torch.preserve_format: self.to(torch.float64, memory_format=memory_format)
    torch.set_default_dtype(torch.float64)  # integer tensor · Python float (dynamic NTK's base)
    try:
        yield
    finally:
        torch.float32, torch.float, torch.Tensor.float, default = saved
        torch.set_default_dtype(default)


def rope_in_float64(model):
    """Inside float32_as_float64(): remake every rotary embedding module from its config, so
    that its inverse frequencies (made at init, in float32) are float64."""
    for name, module in list(model.named_modules()):
        if type(module).__name__.endswith("RotaryEmbedding"):
            parent, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent) if parent else model, child, type(module)(module.config))


def llama_in_float64(model, head_dim, base):
    """transformers computes Llama's RoPE angles and its eager softmax in float32 whatever
    the model's dtype (about 3e-8 from f64). The same formulas in float64: base^(-2p/d)
    angles, and the softmax without its dtype=float32 argument."""
    inner = model.model if hasattr(model, "model") else model
    inv_freq = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)

    def rope(x, position_ids):
        freqs = position_ids[..., None].to(torch.float64) * inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    inner.rotary_emb.forward = rope
    module = transformers.models.llama.modeling_llama
    repeat_kv = module.repeat_kv

    def eager(attention, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
        k, v = repeat_kv(key, attention.num_key_value_groups), repeat_kv(value, attention.num_key_value_groups)
        weights = torch.matmul(query, k.transpose(2, 3)) * scaling
        if attention_mask is not None:
            weights = weights + attention_mask
        weights = torch.softmax(weights, dim=-1)
        return torch.matmul(weights, v).transpose(1, 2).contiguous(), weights

    module.eager_attention_forward = eager


def matrix(t):
    return [[float(x) for x in row] for row in t.to(torch.float64).tolist()]


def write_problem(folder, seen, tokens, title, family, layer, safetensors, heads, kv_heads, atol, rope_base=None, rtol=None):
    """hidden.npy and problem.json in `folder`: X from the captured input, the checkpoint,
    and the captured output (and head 0's weights, where the module returns them) as expect
    (with rtol too where one is given)."""
    folder = Path(folder)
    np.save(folder / "hidden.npy", seen["x"][0].numpy())
    problem = {"title": title, "tokens": tokens, "X": {"npy": "hidden.npy"}, "heads": heads}
    if kv_heads != heads:
        problem["kv_heads"] = kv_heads
    if family in ("gpt2", "llama"):
        problem["mask"] = "causal"
    if family == "llama":
        problem["rope"] = {"base": rope_base}
    problem["checkpoint"] = {"safetensors": str(safetensors), "family": family, "layer": layer}
    problem["expect"] = expectations(seen, atol, rtol)
    (folder / "problem.json").write_text(json.dumps(problem, indent=1) + "\n")
    return problem


def expectations(seen, atol, rtol=None, heads=1):
    """`expect`: the captured output as `final`, and the weights of the first `heads` heads
    (all: None) where they were caught."""
    tol = {"atol": atol} if rtol is None else {"atol": atol, "rtol": rtol}
    expect = [{"name": "final", **tol, "data": matrix(seen["y"][0])}]
    if "weights" in seen:
        for head in range(seen["weights"].shape[1] if heads is None else heads):
            expect.append({"name": "weights", "head": head, **tol, "data": matrix(seen["weights"][0, head])})
    return expect


def write_model_problem(folder, seen, tokens, title, model, layer, tol, heads=1):
    """hidden.npy and problem.json in `folder` for the model-directory route: X from the
    captured input, `"checkpoint": {"model": model, "layer": layer}` (model: the directory,
    relative to `folder` or absolute) and as expect the captured output and the weights
    of the first `heads` heads (None: every head), atol = rtol = tol. No heads, kv_heads, mask or rope: attn-trace takes those
    from the model's config.json."""
    folder = Path(folder)
    np.save(folder / "hidden.npy", seen["x"][0].numpy())
    problem = {"title": title, "tokens": tokens, "checkpoint": {"model": str(model), "layer": layer},
               "X": {"npy": "hidden.npy"}, "expect": expectations(seen, tol, tol, heads)}
    (folder / "problem.json").write_text(json.dumps(problem, indent=1) + "\n")
    return problem
