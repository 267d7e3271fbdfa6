#!/usr/bin/env python3
"""attn_trace.trace_model end to end on the tiny random models of tests/models/ (their
directories, as save_pretrained wrote them; nothing downloaded): one forward pass with
hooks, every layer traced by attn-trace from the model in memory, and mt.weights held
against transformers' own output_attentions of the same forward pass: the table of
docs/PYTHON.md#whole-models (needs torch and transformers, a developer's venv, and the
package: PYTHONPATH=build/python, or pip install .).

Usage: PYTHONPATH=build/python /root/torchvenv/bin/python tools/trace_model_families.py [FOLDER...]
"""
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

import attn_trace  # noqa: E402

MODELS = Path(__file__).resolve().parent.parent / "tests" / "models"
# What each family's tiny model exercises (tests/models/README.md says how it was made).
FOLDERS = {
    "llama3_scaling": "llama: GQA, RoPE scaling (llama3)",
    "llama_yarn": "llama: RoPE scaling (yarn)",
    "mistral_window": "mistral: sliding window",
    "qwen2_window": "qwen2: per-layer windows",
    "qwen3_qknorm": "qwen3: q/k RMSNorm",
    "olmo2_qknorm": "olmo2: q/k norm over all heads",
    "gemma2": "gemma2: softcap, alternating window",
    "gemma3_text": "gemma3: local/global RoPE",
    "phi3": "phi3: fused qkv, partial rotary",
    "gpt_neox": "gpt_neox: fused qkv, partial rotary",
    "bloom": "bloom: ALiBi",
    "deepseek_v3": "deepseek_v3: MLA",
    "gpt2_directory": "gpt2: Conv1D, scale by layer",
    "bert_directory": "bert: encoder, no mask",
}


def transformers_attentions(model, ids, mask):
    with torch.no_grad():
        kwargs = {"input_ids": ids, "attention_mask": mask, "output_attentions": True}
        if model.config.model_type != "bert":
            kwargs["use_cache"] = False
        out = model(**kwargs)
    return out.attentions


def main():
    folders = sys.argv[1:] or list(FOLDERS)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, attn_trace {attn_trace.__version__}, "
          f"{torch.get_num_threads()} threads")
    print("| model (tests/models/) | what it exercises | layers × heads | tokens | max abs difference from output_attentions | seconds |")
    print("|---|---|---|---|---|---|")
    worst = 0.0
    for folder in folders:
        path = MODELS / folder
        config = transformers.AutoConfig.from_pretrained(path)
        auto = transformers.AutoModel if config.model_type == "bert" else transformers.AutoModelForCausalLM
        model = auto.from_pretrained(path, attn_implementation="eager", dtype=torch.float32).eval()
        vocab = config.vocab_size
        rng = np.random.default_rng(0)
        batch = [rng.integers(0, vocab, 9).tolist(), rng.integers(0, vocab, 6).tolist()]
        started = time.perf_counter()
        mt = attn_trace.trace_model(model, ids=batch)
        seconds = time.perf_counter() - started
        padded = torch.tensor([row + [0] * (9 - len(row)) for row in batch])
        mask = torch.tensor([[1] * len(row) + [0] * (9 - len(row)) for row in batch])
        reference = transformers_attentions(model, padded, mask)
        difference = 0.0
        for k, layer in enumerate(mt.layers):
            for b, n in enumerate(mt.lengths):
                ours = mt.weights[k, b, :, :n, :n]
                theirs = reference[layer][b, :, :n, :n].double().numpy()
                difference = max(difference, float(np.abs(ours - theirs).max()))
        worst = max(worst, difference)
        heads = mt.weights.shape[2]
        print(f"| `{folder}` | {FOLDERS.get(folder, '')} | {len(mt.layers)} × {heads} | 9 and 6 (a padded batch) | {difference:.2e} | {seconds:.2f} |")
    print(f"largest difference {worst:.2e}: {'within' if worst <= 1e-5 else 'PAST'} 1e-5")
    sys.exit(0 if worst <= 1e-5 else 1)


main()
