#!/usr/bin/env python3
"""Real-model goldens (docs/PROBLEM.md#real-model-weights-npy-safetensors-checkpoint):
tiny GPT-2, Llama (GQA, RoPE) and BERT models built from a config by Hugging Face
transformers, with random weights and no download.

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

from model_layers import capture, layer_modules, llama_in_float64, write_problem

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


def write(family, model, seen, ids, title, heads, kv_heads, atol, rope_base=None):
    folder = OUT / family
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*"):
        stale.unlink()
    model.save_pretrained(folder, safe_serialization=True)
    for extra in folder.glob("*.json"):  # keep only the weights
        extra.unlink()
    write_problem(folder, seen, [WORDS[i] for i in ids[0].tolist()], title, family, LAYER, "model.safetensors", heads, kv_heads, atol, rope_base)
    sizes = {p.name: p.stat().st_size for p in sorted(folder.iterdir())}
    print(f"wrote {folder.relative_to(ROOT)}: {sizes}")


def gpt2():
    config = transformers.GPT2Config(vocab_size=VOCAB, n_positions=16, n_embd=16, n_layer=2, n_head=2, attn_implementation="eager")
    model = randomise(transformers.GPT2LMHeadModel(config).to(torch.float64), 1, scale=0.6)  # peaked enough to see
    ids = torch.tensor([[0, 1, 2, 3, 4, 5, 6]])
    seen = capture(*layer_modules(model, "gpt2", LAYER), lambda: model(ids))
    write("gpt2", model, seen, ids, f"GPT-2 (tiny, random weights), layer {LAYER}'s attention, transformers {transformers.__version__}, float64",
          2, 2, 1e-10)


def llama():
    config = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, max_position_embeddings=32, attn_implementation="eager")
    model = randomise(transformers.LlamaForCausalLM(config).to(torch.float64), 2)
    llama_in_float64(model, 4, 10000.0)
    ids = torch.tensor([[7, 1, 8, 9, 10, 11]])
    seen = capture(*layer_modules(model, "llama", LAYER), lambda: model(ids))
    write("llama", model, seen, ids, f"Llama (tiny, 4 query heads, 2 KV heads, RoPE), layer {LAYER}, transformers {transformers.__version__}, float64",
          4, 2, 1e-10, rope_base=10000)


def bert():
    config = transformers.BertConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                                     max_position_embeddings=32, attn_implementation="eager")
    model = randomise(transformers.BertModel(config), 3)  # float32, as BERT checkpoints are
    ids = torch.tensor([[12, 13, 14, 15, 0, 16]])
    seen = capture(*layer_modules(model, "bert", LAYER), lambda: model(ids))
    write("bert", model, seen, ids, f"BERT (tiny, random weights, float32), layer {LAYER}'s self-attention and output dense, "
          f"transformers {transformers.__version__}", 2, 2, 1e-5)


def torch_mha():
    """nn.MultiheadAttention's state_dict under a prefix ("attn."), as a module inside a
    bigger model would save it: the torch-mha family with an explicit prefix."""
    from safetensors.torch import save_file
    torch.manual_seed(4)
    mha = randomise(torch.nn.MultiheadAttention(16, 4, bias=True, batch_first=True, dtype=torch.float64), 4, scale=0.4)
    x = torch.randn(1, 5, 16, dtype=torch.float64)
    with torch.no_grad():
        out, weights = mha(x, x, x, need_weights=True, average_attn_weights=False)
    folder = OUT / "torch_mha"
    folder.mkdir(parents=True, exist_ok=True)
    save_file({"attn." + k: v.contiguous() for k, v in mha.state_dict().items()}, str(folder / "model.safetensors"))
    problem = write_problem(folder, {"x": x, "y": out, "weights": weights}, WORDS[20:25],
                            f"nn.MultiheadAttention (4 heads, d = 16) saved under the prefix attn., torch {torch.__version__.split('+')[0]}, float64",
                            "torch-mha", 0, "model.safetensors", 4, 4, 1e-10)
    del problem["checkpoint"]["layer"]
    problem["checkpoint"]["prefix"] = "attn."
    (folder / "problem.json").write_text(json.dumps(problem, indent=1) + "\n")
    print(f"wrote {folder.relative_to(ROOT)}: {({p.name: p.stat().st_size for p in sorted(folder.iterdir())})}")


def array_fixtures():
    """tests/arrays/: .npy files of every dtype, order and header version attn-trace reads,
    and a safetensors file of F64, F32, F16 and BF16 tensors, written by numpy and the
    safetensors library; values.json holds their values as numpy reads them (widened to
    float64), for the C++ tests and as fuzzing seeds."""
    from safetensors.torch import save_file
    folder = ROOT / "tests" / "arrays"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    base = rng.standard_normal((3, 4))
    arrays = {
        "f8_c.npy": base,
        "f4_fortran.npy": np.asfortranarray(base.astype(np.float32)),
        "f2.npy": base.astype(np.float16),
        "i4_vector.npy": np.arange(-3, 5, dtype=np.int32),
        "i8_big_endian.npy": np.arange(6, dtype=">i8").reshape(2, 3),
        "f8_batch.npy": rng.standard_normal((2, 3, 2)),
        "f8_fortran_batch.npy": np.asfortranarray(rng.standard_normal((2, 3, 2))),
    }
    values = {}
    for name, a in arrays.items():
        np.save(folder / name, a)
        values[name] = {"shape": list(a.shape), "data": [float(x) for x in np.load(folder / name).astype(np.float64).ravel(order="C")]}
    # A version 2.0 header (4-byte length), as numpy writes for headers past 65535 bytes.
    with open(folder / "f8_v2.npy", "wb") as f:
        np.lib.format.write_array(f, base, version=(2, 0))
    values["f8_v2.npy"] = values["f8_c.npy"]
    t = torch.tensor(base)
    tensors = {"w64": t, "w32": t.float(), "w16": t.half(), "wbf16": t.bfloat16(), "bias": torch.arange(5, dtype=torch.float32) / 4}
    save_file(tensors, str(folder / "small.safetensors"))
    for name, x in tensors.items():
        values[f"small.safetensors:{name}"] = {"shape": list(x.shape), "data": [float(v) for v in x.to(torch.float64).flatten()]}
    (folder / "values.json").write_text(json.dumps(values, indent=1) + "\n")
    print(f"wrote {folder.relative_to(ROOT)}: {len(values)} arrays")


if __name__ == "__main__":
    array_fixtures()
    gpt2()
    llama()
    bert()
    torch_mha()
