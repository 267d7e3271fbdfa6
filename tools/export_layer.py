#!/usr/bin/env python3
"""Export one attention layer of a local Hugging Face model as an attn-trace problem.

Usage:
    pip install torch numpy transformers safetensors
    python3 tools/export_layer.py MODEL_DIR --text "the cat sat on the mat" --layer 5 --out layer5/
    attn-trace check layer5/problem.json          # the trace equals the real model
    attn-trace run layer5/problem.json --head 3 --steps weights

MODEL_DIR is a directory save_pretrained wrote (config.json, model.safetensors or its
shards, and a tokenizer; without a tokenizer give --ids 12,7,99). Families: GPT-2,
Llama (and Mistral, Qwen2: the same tensor names), BERT. The script runs the model in
float64 (--dtype float32 keeps it as stored), catches the layer's input hidden states
and its attention output, and writes into --out:
  hidden.npy    the layer's input (n, d_model)
  problem.json  tokens as labels, X from hidden.npy, the checkpoint reference (a path
                to the model's safetensors file, relative to --out), heads and
                kv_heads from the config, and the model's output as `expect`
Nothing is downloaded; torch and transformers are needed here only, never by attn-trace.
"""

import argparse
import json
import os
import sys
from pathlib import Path

import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_layers import FAMILIES, capture, layer_modules, llama_in_float64, write_problem  # noqa: E402


def shard_with(model_dir, tensor):
    """The safetensors file holding `tensor`: model.safetensors, or the shard the index names."""
    index = model_dir / "model.safetensors.index.json"
    if index.exists():
        weight_map = json.loads(index.read_text())["weight_map"]
        for name, shard in weight_map.items():
            if name.endswith(tensor):
                return model_dir / shard
        sys.exit(f"{index}: no tensor ending in {tensor}")
    single = model_dir / "model.safetensors"
    if not single.exists():
        sys.exit(f"{model_dir}: no model.safetensors (attn-trace reads safetensors; save the model with safe_serialization=True)")
    return single


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("--text", help="the sentence (needs the model's tokenizer)")
    parser.add_argument("--ids", help="token ids instead of --text, e.g. 12,7,99")
    parser.add_argument("--layer", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("layer"))
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    args = parser.parse_args()
    if bool(args.text) == bool(args.ids):
        parser.error("give --text or --ids")

    config = transformers.AutoConfig.from_pretrained(args.model_dir)
    family = FAMILIES.get(config.model_type)
    if family is None:
        sys.exit(f"model type {config.model_type!r}: attn-trace knows {', '.join(sorted(FAMILIES))}")
    dtype = torch.float64 if args.dtype == "float64" else torch.float32
    model = transformers.AutoModel.from_pretrained(args.model_dir, attn_implementation="eager", dtype=dtype).eval()
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    rope_base = None
    if family == "llama":
        rope_base = float(getattr(config, "rope_theta", None) or (getattr(config, "rope_parameters", None) or {}).get("rope_theta", 10000.0))
        if dtype == torch.float64:
            llama_in_float64(model, config.hidden_size // heads, rope_base)
    if args.text:
        tokenizer = transformers.AutoTokenizer.from_pretrained(args.model_dir)
        ids = tokenizer(args.text, return_tensors="pt")["input_ids"]
        tokens = tokenizer.convert_ids_to_tokens(ids[0])
    else:
        ids = torch.tensor([[int(i) for i in args.ids.split(",")]])
        tokens = [str(i) for i in ids[0].tolist()]
    seen = capture(*layer_modules(model, family, args.layer), lambda: model(input_ids=ids))
    first = {"gpt2": f"h.{args.layer}.attn.c_attn.weight", "llama": f"layers.{args.layer}.self_attn.q_proj.weight",
             "bert": f"encoder.layer.{args.layer}.attention.self.query.weight"}[family]
    weights = shard_with(args.model_dir, first)
    args.out.mkdir(parents=True, exist_ok=True)
    relative = os.path.relpath(weights.resolve(), args.out.resolve())
    atol = 1e-10 if dtype == torch.float64 else 1e-5
    title = f"{args.model_dir.name}, layer {args.layer} ({config.model_type}, transformers {transformers.__version__}, {args.dtype})"
    write_problem(args.out, seen, tokens, title, family, args.layer, relative, heads, kv_heads, atol, rope_base)
    print(f"wrote {args.out / 'problem.json'} and {args.out / 'hidden.npy'} ({len(tokens)} tokens); "
          f"check it with: attn-trace check {args.out / 'problem.json'}")


if __name__ == "__main__":
    main()
