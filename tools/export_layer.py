#!/usr/bin/env python3
"""Export one attention layer of a local Hugging Face model as an attn-trace problem.

Usage:
    pip install torch numpy transformers safetensors
    python3 tools/export_layer.py MODEL_DIR --text "the cat sat on the mat" --layer 5 --out layer5/
    python3 tools/export_layer.py MODEL_DIR --ids 12,7,99,3 --layer 1 --out layer1/   # no tokenizer
    python3 tools/export_layer.py MODEL_DIR --text "the cat sat on the mat" --layers all --out model/
    python3 tools/export_layer.py MODEL_DIR --text "the cat sat" --text "a dog ran far away" --layer 1 --out batch/
    attn-trace check layer5/problem.json          # the trace equals the real model
    attn-trace run layer5/problem.json --head 3 --steps weights
    attn-trace view model/layer*/problem.json     # every layer and head (the folders sort by layer)

MODEL_DIR is a directory save_pretrained wrote: config.json, model.safetensors or
model.safetensors.index.json and its shards, and a tokenizer (without one, as in the tiny
models of tests/models/, give the token ids with --ids). By config.json's model_type:
  llama, mistral, qwen2, qwen3, olmo2, gemma2, gemma3_text, gemma3, phi3, gpt_neox, bloom,
  deepseek_v3, gpt2, bert: the model-directory problem, `"checkpoint": {"model": MODEL_DIR,
      "layer": L}` (MODEL_DIR relative to --out), with no heads, mask or rope: attn-trace
      reads those, RoPE scaling, norms, scale, softcap and sliding window from config.json
      itself. For gemma3, the multimodal wrapper, only its text model is loaded (its
      text_config, the tensors under model.language_model. or language_model.model.; no
      vision tower); for bert, the encoder (AutoModel).

The script loads the model with eager attention in the dtype its safetensors store:
float32 for F32, float64 for F64, and BF16 or F16 widened to float32 (as attn-trace reads
them; a bfloat16 run would round far past any useful tolerance); --dtype overrides. It
runs the model on the tokens (positions 0..n-1; a batch of prompts below), catches layer L's
(with --layers, each listed layer's: one run of the model each)
attention input (the attention module's hidden_states argument: after the layer's input
norm; OLMo 2's and BERT's residual stream) and its output after the output projection,
before any residual or norm (BLOOM: its `dense` output, before the residual add inside
BloomAttention; BERT: attention.output.dense's), and head 0's eager weights, and writes
into --out:
  hidden.npy    the layer's attention input (n, d_model)
  problem.json  title, tokens (each id decoded by the tokenizer, or the ids as strings),
                the checkpoint, X from hidden.npy, and `expect`: `final` and every head's
                `weights` as the model computed them, atol = rtol = 1e-5 for a float32
                run, 1e-10 for a float64 one
and with --layers (all, or a list such as 0,3,5) the same for each layer in OUT/layerL/
(layer numbers written with as many digits as the last one has, so that the folders sort
in layer order for `attn-trace view OUT/layer*/problem.json`).
Several --text (or --ids) make one batch, padded on the right (each prompt starts at
position 0) and run once with its attention mask: each prompt is written as its own problem,
OUT/promptP/ (with --layers OUT/promptP/layerL/), X its own rows of the batch's hidden
states and `expect` its own rows and keys of the output and weights. The padding is no
prompt's: a padded query row of a sliding-window layer can see no key at all, and what
the model writes there is no attention anyone reads.
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
from model_layers import (MODEL_TYPES, capture_attention, float32_as_float64, rope_in_float64, stored_dtype,  # noqa: E402
                          write_model_problem)

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "vocab.txt",
                   "spiece.model")
# Gemma 3's multimodal checkpoints keep the text model under model.language_model. (older
# ones language_model.model.): renamed to Gemma3ForCausalLM's names when only it is loaded.
TEXT_KEYS = {r"^model\.language_model\.": "model.", r"^language_model\.model\.": "model.",
             r"^language_model\.lm_head\.": "lm_head."}


def load_model(model_dir, config, dtype, layers):
    """AutoModelForCausalLM (BERT: AutoModel) with eager attention in dtype; for a config wrapping a text
    config (Gemma 3's multimodal one), the text model alone, its tensors renamed, so that
    no vision tower is built (without a vision_config, transformers would make a default
    SigLIP one of random weights). Exits if a tensor of a layer in `layers` is not in the checkpoint;
    says how many others were not (left as initialised) or not used (a vision tower's)."""
    kwargs = dict(attn_implementation="eager", dtype=dtype, output_loading_info=True)
    text = getattr(config, "text_config", None)
    verbosity = transformers.utils.logging.get_verbosity()
    transformers.utils.logging.set_verbosity_error()  # its load report lists every key; a summary follows
    try:
        if text is not None:
            model, info = transformers.AutoModelForCausalLM.from_pretrained(model_dir, config=text, key_mapping=TEXT_KEYS, **kwargs)
        else:
            auto = transformers.AutoModel if config.model_type == "bert" else transformers.AutoModelForCausalLM
            model, info = auto.from_pretrained(model_dir, config=config, **kwargs)
    finally:
        transformers.utils.logging.set_verbosity(verbosity)
    missing = sorted(info["missing_keys"])
    lacking = [k for k in missing for layer in layers if any(f"{part}.{layer}." in k for part in ("layers", "h", "layer"))]
    if lacking:
        sys.exit(f"{model_dir}: these layers' tensors are not in the checkpoint: {', '.join(lacking[:5])}")
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
                                            f"checkpoint, and the model's output and every head's weights as expect); with "
                                            f"--layers, OUT/layerL/ for each. Then run attn-trace check OUT/problem.json. Model "
                                            f"types: {', '.join(MODEL_TYPES)} (\"checkpoint\": {{\"model\": MODEL_DIR, "
                                            f"\"layer\": L}}). Nothing is downloaded.")
    parser.add_argument("model_dir", type=Path, help="a directory save_pretrained wrote (config.json and safetensors)")
    parser.add_argument("--text", action="append", help="the sentence (needs the model's tokenizer in MODEL_DIR); "
                        "several --text make a batch")
    parser.add_argument("--ids", action="append", help="token ids instead of --text, e.g. 12,7,99 (for a model without a "
                        "tokenizer); several --ids make a batch")
    parser.add_argument("--layer", type=int, default=0, help="the layer, from 0 (default 0)")
    parser.add_argument("--layers", help="several layers instead of --layer: all, or a list such as 0,3,5; "
                        "each into OUT/layerL/")
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
    if kind not in MODEL_TYPES:
        sys.exit(f"{model_dir}: model type {kind!r}: export_layer.py knows {', '.join(MODEL_TYPES)}")
    try:
        dtype, stored = stored_dtype(model_dir)
    except (OSError, ValueError) as e:
        sys.exit(str(e))
    if args.dtype != "auto":
        dtype = getattr(torch, args.dtype)
    text_config = getattr(config, "text_config", None) or config
    count = text_config.num_hidden_layers
    try:
        layers = list(range(count)) if args.layers == "all" else [int(l) for l in args.layers.split(",")] if args.layers else [args.layer]
    except ValueError:
        parser.error(f"--layers {args.layers!r}: give all or comma-separated layers, e.g. 0,3,5")
    for layer in layers:
        if not 0 <= layer < count:
            sys.exit(f"{model_dir}: layer {layer}: the model has layers 0..{count - 1}")

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
        rows = [tokenizer(text)["input_ids"] for text in args.text]
    else:
        try:
            rows = [[int(i) for i in ids.split(",")] for ids in args.ids]
        except ValueError:
            parser.error(f"--ids {args.ids!r}: give comma-separated token ids, e.g. 12,7,99")
    vocab = text_config.vocab_size
    for row in rows:
        if not row or min(row) < 0 or max(row) >= vocab:
            sys.exit(f"token ids {row}: each must lie in 0..{vocab - 1} (the model's vocab_size is {vocab})")
    # Padded on the right with the first token (the attention mask hides it; any id would do).
    lengths = [len(row) for row in rows]
    width = max(lengths)
    ids = torch.tensor([row + [row[0]] * (width - len(row)) for row in rows])
    attention_mask = torch.tensor([[1] * n + [0] * (width - n) for n in lengths])
    batch = len(rows)
    if tokenizer is not None:
        prompts = [[tokenizer.decode([i]) for i in row] for row in rows]
    else:
        prompts = [[str(i) for i in row] for row in rows]

    # In float64, transformers' float32 upcasts become float64 (model_layers.float32_as_float64):
    # inside it the RoPE modules are remade (their inverse frequencies come from init) and the
    # model runs.
    wide = float32_as_float64() if dtype == torch.float64 else contextlib.nullcontext()
    tol = 1e-10 if dtype == torch.float64 else 1e-5
    run_as = str(dtype).replace("torch.", "") + (f" (stored {stored})" if stored not in ("F32", "F64") and args.dtype == "auto" else "")
    model = load_model(model_dir, config, dtype, layers)
    digits = len(str(max(layers)))
    for layer in layers:
        out = args.out / f"layer{layer:0{digits}d}" if args.layers else args.out
        with wide:
            if dtype == torch.float64:
                rope_in_float64(model)
            try:
                inputs = {"input_ids": ids, "attention_mask": attention_mask} if batch > 1 else {"input_ids": ids}
                seen = capture_attention(model, layer, lambda: model(**inputs, use_cache=False) if kind != "bert" else model(**inputs))
            except ValueError as e:
                sys.exit(f"{model_dir}: {e}")
        title = f"{model_dir.resolve().name}, layer {layer} ({kind}, transformers {transformers.__version__}, {run_as}, eager)"
        for b, n in enumerate(lengths):
            # A prompt of a batch: its own rows (and keys) of what the batch's run caught.
            own = {"x": seen["x"][b:b + 1, :n], "y": seen["y"][b:b + 1, :n]}
            if "weights" in seen:
                own["weights"] = seen["weights"][b:b + 1, :, :n, :n]
            folder = out if batch == 1 else args.out / f"prompt{b}" / out.relative_to(args.out)
            folder.mkdir(parents=True, exist_ok=True)
            try:
                where = os.path.relpath(model_dir.resolve(), folder.resolve())
            except ValueError:  # another drive
                where = str(model_dir.resolve())
            write_model_problem(folder, own, prompts[b], title + (f", prompt {b} of {batch}" if batch > 1 else ""), where, layer, tol,
                                heads=None)
            weights = "final and every head's weights" if "weights" in seen else "final (the module returned no weights)"
            print(f"wrote {folder / 'problem.json'} and {folder / 'hidden.npy'} ({n} tokens, {kind}, layer {layer}, "
                  f"{run_as}; expect: {weights}, tolerance {tol:g}); check it with: attn-trace check {folder / 'problem.json'}")


if __name__ == "__main__":
    main()
