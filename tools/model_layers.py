"""What tools/make_model_goldens.py and tools/export_layer.py share: where each model
family's attention layer is, how to catch its input and output, and how to write the
problem file attn-trace reads (docs/PROBLEM.md#real-model-weights-npy-safetensors-checkpoint).
Needs torch and transformers (generator-side only, never a runtime dependency of
attn-trace)."""

import json
from pathlib import Path

import numpy as np
import torch
import transformers

# transformers' model_type → attn-trace's checkpoint family (same tensor names).
FAMILIES = {"gpt2": "gpt2", "llama": "llama", "mistral": "llama", "qwen2": "llama", "bert": "bert"}


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


def capture(module_in, module_out, run):
    """The hidden states entering module_in, and module_out's output (and weights), during run()."""
    seen = {}

    def pre(_, args, kwargs):
        seen["x"] = (args[0] if args else kwargs["hidden_states"]).detach().clone()

    def post(_, __, output):
        seen["y"] = (output[0] if isinstance(output, tuple) else output).detach().clone()
        if isinstance(output, tuple) and len(output) > 1 and torch.is_tensor(output[1]):
            seen["weights"] = output[1].detach().clone()

    hooks = [module_in.register_forward_pre_hook(pre, with_kwargs=True), module_out.register_forward_hook(post)]
    with torch.no_grad():
        run()
    for h in hooks:
        h.remove()
    return seen


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


def write_problem(folder, seen, tokens, title, family, layer, safetensors, heads, kv_heads, atol, rope_base=None):
    """hidden.npy and problem.json in `folder`: X from the captured input, the checkpoint,
    and the captured output (and head 0's weights, where the module returns them) as expect."""
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
    expect = [{"name": "final", "atol": atol, "data": matrix(seen["y"][0])}]
    if "weights" in seen:
        expect.append({"name": "weights", "head": 0, "atol": atol, "data": matrix(seen["weights"][0, 0])})
    problem["expect"] = expect
    (folder / "problem.json").write_text(json.dumps(problem, indent=1) + "\n")
    return problem
