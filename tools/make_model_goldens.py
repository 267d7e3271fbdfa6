#!/usr/bin/env python3
"""Real-model goldens (SPEC §19): tiny GPT-2, Llama (GQA, RoPE) and BERT models built
from a config by Hugging Face transformers, with random weights and no download.

Usage:
    pip install torch numpy transformers safetensors && python3 tools/make_model_goldens.py

For each family it writes tests/models/FAMILY/:
  model.safetensors  the whole model, as save_pretrained writes it
  hidden.npy         the input hidden states of one attention layer (what the layer reads)
  problem.json       a problem file: X from hidden.npy, the projections from the
                     checkpoint, and as `expect` the layer's attention output (and head
                     0's weights) as the real model computed them
`attn-trace check tests/models/*/problem.json` then confirms that the trace equals the
model. GPT-2 and Llama run in float64 (atol 1e-10), BERT in float32 (atol 1e-5, the
tolerance of f32 reading and computing). transformers computes Llama's RoPE angles and
its eager softmax in float32 whatever the model's dtype (about 3e-8 from f64); the
script runs both in float64 instead — the same formulas, base^(-2p/d) and softmax
without the dtype=float32 argument — so that the file checks the layer's arithmetic to
f64 rounding (with transformers' own float32 parts the difference is 2.5e-8).
This script (and transformers) is a generator-side dependency only.
"""

import json
import math
from pathlib import Path

import numpy as np
import torch
import transformers

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "models"
WORDS = ("the cat sat on a warm mat while rain fell over quiet old town and every dog slept near fire "
         "but one bird sang softly to morning light across green hills under blue sky far from sea").split()
VOCAB = len(WORDS)
LAYER = 1
torch.set_num_threads(1)


def randomise(model, seed, scale=0.2):
    """Every parameter from N(0, scale²): biases too, which the default initialisation zeroes."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * scale)
    return model.eval()


def capture(module_in, module_out, run):
    """The hidden states entering module_in and the output of module_out, during run()."""
    seen = {}

    def pre(_, args, kwargs):
        seen["x"] = (args[0] if args else kwargs["hidden_states"]).detach().clone()

    def post(_, __, output):
        seen["y"] = (output[0] if isinstance(output, tuple) else output).detach().clone()
        if isinstance(output, tuple) and len(output) > 1 and output[1] is not None:
            seen["weights"] = output[1].detach().clone()

    hooks = [module_in.register_forward_pre_hook(pre, with_kwargs=True), module_out.register_forward_hook(post)]
    with torch.no_grad():
        run()
    for h in hooks:
        h.remove()
    return seen


def float64_rope(rotary, head_dim, base):
    """Llama's rotary embedding with its angles in float64 (transformers uses float32)."""
    inv_freq = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)

    def forward(x, position_ids):
        freqs = position_ids[..., None].to(torch.float64) * inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    rotary.forward = forward


def float64_softmax_attention():
    """Llama's eager attention, as transformers writes it, with its softmax left in the model's dtype."""
    llama_module = transformers.models.llama.modeling_llama
    repeat_kv = llama_module.repeat_kv

    def eager(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
        key_states, value_states = repeat_kv(key, module.num_key_value_groups), repeat_kv(value, module.num_key_value_groups)
        weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
        if attention_mask is not None:
            weights = weights + attention_mask
        weights = torch.softmax(weights, dim=-1)
        return torch.matmul(weights, value_states).transpose(1, 2).contiguous(), weights

    llama_module.eager_attention_forward = eager


def matrix(t):
    return [[float(x) for x in row] for row in t.to(torch.float64).tolist()]


def write(family, model, seen, ids, title, heads, kv_heads, mask, atol, rope=None):
    folder = OUT / family
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*"):
        stale.unlink()
    model.save_pretrained(folder, safe_serialization=True)
    for extra in folder.glob("*.json"):  # keep only the weights
        extra.unlink()
    x = seen["x"][0]
    np.save(folder / "hidden.npy", x.numpy())
    problem = {"title": title, "tokens": [WORDS[i] for i in ids[0].tolist()], "X": {"npy": "hidden.npy"}, "heads": heads}
    if kv_heads != heads:
        problem["kv_heads"] = kv_heads
    if mask:
        problem["mask"] = mask
    if rope:
        problem["rope"] = rope
    problem["checkpoint"] = {"safetensors": "model.safetensors", "family": family, "layer": LAYER}
    expect = [{"name": "final", "atol": atol, "data": matrix(seen["y"][0])}]
    if "weights" in seen:
        expect.append({"name": "weights", "head": 0, "atol": atol, "data": matrix(seen["weights"][0, 0])})
    problem["expect"] = expect
    text = json.dumps(problem, indent=1)
    (folder / "problem.json").write_text(text + "\n")
    sizes = {p.name: p.stat().st_size for p in sorted(folder.iterdir())}
    print(f"wrote {folder.relative_to(ROOT)}: {sizes}")


def gpt2():
    config = transformers.GPT2Config(vocab_size=VOCAB, n_positions=16, n_embd=16, n_layer=2, n_head=2, attn_implementation="eager")
    model = randomise(transformers.GPT2LMHeadModel(config).to(torch.float64), 1)
    ids = torch.tensor([[0, 1, 2, 3, 4, 5, 6]])
    seen = capture(model.transformer.h[LAYER].attn, model.transformer.h[LAYER].attn, lambda: model(ids))
    write("gpt2", model, seen, ids, f"GPT-2 (tiny, random weights), layer {LAYER}'s attention, transformers {transformers.__version__}, float64",
          2, 2, "causal", 1e-10)


def llama():
    config = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, max_position_embeddings=32, attn_implementation="eager")
    model = randomise(transformers.LlamaForCausalLM(config).to(torch.float64), 2)
    float64_rope(model.model.rotary_emb, 4, 10000.0)
    float64_softmax_attention()
    ids = torch.tensor([[7, 1, 8, 9, 10, 11]])
    seen = capture(model.model.layers[LAYER].self_attn, model.model.layers[LAYER].self_attn, lambda: model(ids))
    write("llama", model, seen, ids, f"Llama (tiny, 4 query heads, 2 KV heads, RoPE), layer {LAYER}, transformers {transformers.__version__}, float64",
          4, 2, "causal", 1e-10, rope={"base": 10000})


def bert():
    config = transformers.BertConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                                     max_position_embeddings=32, attn_implementation="eager")
    model = randomise(transformers.BertModel(config), 3)  # float32, as BERT checkpoints are
    ids = torch.tensor([[12, 13, 14, 15, 0, 16]])
    layer = model.encoder.layer[LAYER].attention
    seen = capture(layer.self, layer.output.dense, lambda: model(ids))
    seen.pop("weights", None)
    write("bert", model, seen, ids, f"BERT (tiny, random weights, float32), layer {LAYER}'s self-attention and output dense, "
          f"transformers {transformers.__version__}", 2, 2, None, 1e-5)


if __name__ == "__main__":
    gpt2()
    llama()
    bert()
