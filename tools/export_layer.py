#!/usr/bin/env python3
"""Export one attention layer of a local Hugging Face model as an attn-trace problem.

Usage:
    pip install torch numpy transformers safetensors
    python3 tools/export_layer.py MODEL_DIR --text "the cat sat on the mat" --layer 5 --out layer5/
    python3 tools/export_layer.py MODEL_DIR --ids 12,7,99,3 --layer 1 --out layer1/   # no tokenizer
    attn-trace check layer5/problem.json          # the trace equals the real model
    attn-trace run layer5/problem.json --head 3 --steps weights

MODEL_DIR is a directory save_pretrained wrote: config.json, model.safetensors or
model.safetensors.index.json and its shards, and a tokenizer (without one, as in the tiny
models of tests/models/, give the token ids with --ids). By config.json's model_type:
  llama, mistral, qwen2, qwen3, olmo2, gemma2, gemma3_text, gemma3, phi3, gpt_neox, bloom,
  deepseek_v3: the model-directory problem, `"checkpoint": {"model": MODEL_DIR, "layer": L}`
      (MODEL_DIR relative to --out), with no heads, mask or rope: attn-trace reads those,
      RoPE scaling, norms, scale, softcap and sliding window from config.json itself. For
      gemma3, the multimodal wrapper, only its text model is loaded (its text_config, the
      tensors under model.language_model. or language_model.model.; no vision tower).
  gpt2, bert: the older `"checkpoint": {"safetensors": FILE, "family": F, "layer": L}`,
      with heads and kv_heads from the config (and the causal mask for gpt2).

The script loads the model with eager attention in the dtype its safetensors store:
float32 for F32, float64 for F64, and BF16 or F16 widened to float32 (as attn-trace reads
them; a bfloat16 run would round far past any useful tolerance); --dtype overrides. It
runs the model on the tokens (batch 1, positions 0..n-1, no padding), catches layer L's
attention input (the attention module's hidden_states argument: after the layer's input
norm; OLMo 2's and BERT's residual stream) and its output after the output projection,
before any residual or norm (BLOOM: its `dense` output, before the residual add inside
BloomAttention; BERT: attention.output.dense's), and head 0's eager weights, and writes
into --out:
  hidden.npy    the layer's attention input (n, d_model)
  problem.json  title, tokens (each id decoded by the tokenizer, or the ids as strings),
                the checkpoint, X from hidden.npy, and `expect`: `final` and head 0's
                `weights` as the model computed them, atol = rtol = 1e-5 for a float32
                run, 1e-10 for a float64 one
In float64, transformers' own float32 upcasts (RoPE's inverse frequencies and angles, the
eager softmax, RMSNorm) run in float64 too (tools/model_layers.py, float32_as_float64), so
that `expect` is float64 arithmetic throughout. A float32 run's last bits depend on the
number of threads (OMP_NUM_THREADS), well inside 1e-5.
Nothing is downloaded; torch and transformers are needed here only, never by attn-trace.
"""

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import transformers  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_layers import (FAMILIES, MODEL_TYPES, capture, capture_attention, float32_as_float64, layer_modules,  # noqa: E402
                          rope_in_float64, stored_dtype, write_model_problem, write_problem)

OLDER = ("gpt2", "bert")  # model types written in the older safetensors + family form
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "vocab.txt",
                   "spiece.model")
# Gemma 3's multimodal checkpoints keep the text model under model.language_model. (older
# ones language_model.model.): renamed to Gemma3ForCausalLM's names when only it is loaded.
TEXT_KEYS = {r"^model\.language_model\.": "model.", r"^language_model\.model\.": "model.",
             r"^language_model\.lm_head\.": "lm_head."}


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


def load_causal_lm(model_dir, config, dtype, layer):
    """AutoModelForCausalLM with eager attention in dtype; for a config wrapping a text
    config (Gemma 3's multimodal one), the text model alone, its tensors renamed, so that
    no vision tower is built (without a vision_config, transformers would make a default
    SigLIP one of random weights). Exits if a tensor of `layer` is not in the checkpoint;
    says how many others were not (left as initialised) or not used (a vision tower's)."""
    kwargs = dict(attn_implementation="eager", dtype=dtype, output_loading_info=True)
    text = getattr(config, "text_config", None)
    verbosity = transformers.utils.logging.get_verbosity()
    transformers.utils.logging.set_verbosity_error()  # its load report lists every key; a summary follows
    try:
        if text is not None:
            model, info = transformers.AutoModelForCausalLM.from_pretrained(model_dir, config=text, key_mapping=TEXT_KEYS, **kwargs)
        else:
            model, info = transformers.AutoModelForCausalLM.from_pretrained(model_dir, config=config, **kwargs)
    finally:
        transformers.utils.logging.set_verbosity(verbosity)
    missing = sorted(info["missing_keys"])
    lacking = [k for k in missing if f"layers.{layer}." in k or f"h.{layer}." in k]
    if lacking:
        sys.exit(f"{model_dir}: layer {layer}'s tensors are not in the checkpoint: {', '.join(lacking[:5])}")
    if missing:
        print(f"note: {len(missing)} tensors not in the checkpoint, left as transformers initialised them ({', '.join(missing[:3])}"
              f"{', …' if len(missing) > 3 else ''})", file=sys.stderr)
    if info["unexpected_keys"]:
        unused = sorted(info["unexpected_keys"])
        print(f"note: {len(unused)} tensors of the checkpoint not used ({', '.join(unused[:2])}{', …' if len(unused) > 2 else ''})",
              file=sys.stderr)
    return model.eval()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=f"Writes OUT/hidden.npy (layer L's attention input) and OUT/problem.json (X, the "
                                            f"checkpoint, and the model's output and head 0's weights as expect); then run "
                                            f"attn-trace check OUT/problem.json. Model types: {', '.join(MODEL_TYPES)} "
                                            f"(\"checkpoint\": {{\"model\": MODEL_DIR, \"layer\": L}}); {', '.join(OLDER)} "
                                            f"(\"checkpoint\": {{\"safetensors\": FILE, \"family\": F, \"layer\": L}} with heads). "
                                            f"Nothing is downloaded.")
    parser.add_argument("model_dir", type=Path, help="a directory save_pretrained wrote (config.json and safetensors)")
    parser.add_argument("--text", help="the sentence (needs the model's tokenizer in MODEL_DIR)")
    parser.add_argument("--ids", help="token ids instead of --text, e.g. 12,7,99 (for a model without a tokenizer)")
    parser.add_argument("--layer", type=int, default=0, help="the layer, from 0 (default 0)")
    parser.add_argument("--out", type=Path, default=Path("layer"), help="the folder to write hidden.npy and problem.json "
                        "into (default ./layer)")
    parser.add_argument("--dtype", choices=["auto", "float32", "float64"], default="auto",
                        help="run the model in: auto (default) the dtype its safetensors store, BF16 and F16 widened "
                             "to float32; float64 widens a float32 model and checks to 1e-10")
    args = parser.parse_args()
    if bool(args.text) == bool(args.ids):
        parser.error("give --text or --ids")
    transformers.utils.logging.disable_progress_bar()

    model_dir = args.model_dir
    if not (model_dir / "config.json").exists():
        sys.exit(f"{model_dir}: no config.json (give a directory save_pretrained wrote)")
    config = transformers.AutoConfig.from_pretrained(model_dir)
    kind = config.model_type
    if kind not in MODEL_TYPES and kind not in OLDER:
        sys.exit(f"{model_dir}: model type {kind!r}: export_layer.py knows {', '.join(MODEL_TYPES + OLDER)}")
    try:
        dtype, stored = stored_dtype(model_dir)
    except (OSError, ValueError) as e:
        sys.exit(str(e))
    if args.dtype != "auto":
        dtype = getattr(torch, args.dtype)
    text_config = getattr(config, "text_config", None) or config
    layers = text_config.num_hidden_layers
    if not 0 <= args.layer < layers:
        sys.exit(f"{model_dir}: --layer {args.layer}: the model has layers 0..{layers - 1}")

    tokenizer, why = None, f"no tokenizer ({', '.join(TOKENIZER_FILES)})"
    if any((model_dir / f).exists() for f in TOKENIZER_FILES):
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
        except Exception as e:  # noqa: BLE001 (any failure: then the ids are the labels)
            why = f"its tokenizer does not load ({type(e).__name__}: {e})"
            if args.ids:
                print(f"note: {model_dir}: {why}; the tokens are the ids", file=sys.stderr)
    if args.text:
        if tokenizer is None:
            sys.exit(f"{model_dir}: {why}: give the token ids with --ids 12,7,99")
        ids = tokenizer(args.text, return_tensors="pt")["input_ids"]
    else:
        try:
            ids = torch.tensor([[int(i) for i in args.ids.split(",")]])
        except ValueError:
            parser.error(f"--ids {args.ids!r}: give comma-separated token ids, e.g. 12,7,99")
    vocab = text_config.vocab_size
    if ids.numel() == 0 or int(ids.min()) < 0 or int(ids.max()) >= vocab:
        sys.exit(f"token ids {ids[0].tolist()}: each must lie in 0..{vocab - 1} (the model's vocab_size is {vocab})")
    if tokenizer is not None:
        tokens = [tokenizer.decode([i]) for i in ids[0].tolist()]
    else:
        tokens = [str(i) for i in ids[0].tolist()]

    args.out.mkdir(parents=True, exist_ok=True)
    # In float64, transformers' float32 upcasts become float64 (model_layers.float32_as_float64):
    # inside it the RoPE modules are remade (their inverse frequencies come from init) and the
    # model runs.
    wide = float32_as_float64() if dtype == torch.float64 else contextlib.nullcontext()
    tol = 1e-10 if dtype == torch.float64 else 1e-5
    run_as = str(dtype).replace("torch.", "") + (f" (stored {stored})" if stored not in ("F32", "F64") and args.dtype == "auto" else "")
    title = f"{model_dir.resolve().name}, layer {args.layer} ({kind}, transformers {transformers.__version__}, {run_as}, eager)"
    if kind in MODEL_TYPES:
        model = load_causal_lm(model_dir, config, dtype, args.layer)
    else:
        family = FAMILIES[kind]
        model = transformers.AutoModel.from_pretrained(model_dir, attn_implementation="eager", dtype=dtype).eval()
    with wide:
        if dtype == torch.float64:
            rope_in_float64(model)
        if kind in MODEL_TYPES:
            try:
                seen = capture_attention(model, args.layer, lambda: model(input_ids=ids, use_cache=False))
            except ValueError as e:
                sys.exit(f"{model_dir}: {e}")
        else:
            # head 0's weights from the module whose input is X (BERT's self-attention returns them;
            # its output dense, where `final` is caught, does not)
            first, last = layer_modules(model, family, args.layer)
            seen = capture(first, last, lambda: model(input_ids=ids), module_weights=first)
    if kind in MODEL_TYPES:
        try:
            where = os.path.relpath(model_dir.resolve(), args.out.resolve())
        except ValueError:  # another drive
            where = str(model_dir.resolve())
        write_model_problem(args.out, seen, tokens, title, where, args.layer, tol)
    else:
        heads = config.num_attention_heads
        kv_heads = getattr(config, "num_key_value_heads", None) or heads
        tensor = {"gpt2": f"h.{args.layer}.attn.c_attn.weight", "bert": f"encoder.layer.{args.layer}.attention.self.query.weight"}[family]
        relative = os.path.relpath(shard_with(model_dir, tensor).resolve(), args.out.resolve())
        write_problem(args.out, seen, tokens, title, family, args.layer, relative, heads, kv_heads, tol, rtol=tol)
    weights = "final and head 0's weights" if "weights" in seen else "final (the module returned no weights)"
    print(f"wrote {args.out / 'problem.json'} and {args.out / 'hidden.npy'} ({len(tokens)} tokens, {kind}, layer {args.layer}, "
          f"{run_as}; expect: {weights}, tolerance {tol:g}); check it with: attn-trace check {args.out / 'problem.json'}")


if __name__ == "__main__":
    main()
