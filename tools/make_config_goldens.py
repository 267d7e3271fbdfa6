#!/usr/bin/env python3
"""Model-directory goldens: tiny random-weight Hugging Face models of several families,
each saved as `save_pretrained` writes it (config.json + model.safetensors), for
attn-trace's "model directory" route (`"checkpoint": {"model": ".", "layer": L}`, which
reads the family, heads, head_dim, RoPE, norms, scale, softcap and window from config.json).

Usage:
    pip install torch numpy transformers safetensors && python3 tools/make_config_goldens.py
(it rewrites every golden; a run takes seconds)

For each golden it writes tests/models/NAME/:
  config.json        as save_pretrained writes it (generation_config.json removed)
  model.safetensors  the whole model, float32
  hidden.npy         the hidden states entering layer L's self_attn (its hidden_states argument;
                     GPT-NeoX's `attention`, BLOOM's `self_attention`: after input_layernorm)
  problem.json       X from hidden.npy and, as `expect`, the attention module's output
                     (after o_proj, before residual or post-norm) and head 0's eager weights
                     (BLOOM's self_attention adds the residual inside its forward: there
                     `final` is its `dense` output, before that add)
and, where a second layer of another kind (sliding vs full) is checked, hidden_layer0.npy
and problem_layer0.json. For mistral_window, llama_dynamic and deepseek_v3 also
  hidden_decode.npy  the hidden states entering layer L's self_attn when the model runs token
                     by token with a real KV cache (transformers.DynamicCache(config=...), one
                     token a step, position t at step t, use_cache=True, no prefill block): row t
                     is what the cached layer saw at step t
  problem_decode.json X from hidden_decode.npy and, as `expect`, one `final` entry a token,
                     {"name": "final", "t": t, "atol": 1e-5, "rtol": 1e-5, "data": [d_model]}:
                     the attention module's output at step t (after o_proj, before residual),
                     so that attn-trace checks its `decode`. Sliding window and MLA: the rows
                     equal the full pass's within 1e-5 (asserted). Dynamic NTK: they differ past
                     max_position_embeddings (cached keys keep the rotation they were appended
                     with; the token at t uses the base for length t + 1), asserted > 1e-4. Every weight, norm weights too, is random from a fixed seed (RMSNorm
weights 1 + 0.3 N(0, 1); Gemma's (1 + w) norms w = 0.2 N(0, 1)); input ids random from a fixed
seed, batch 1, positions 0..n-1, no padding (LayerNorm weights, GPT-NeoX's and BLOOM's, are
1 + 0.3 N(0, 1) too, their biases N(0, 0.3²)); transformers' eager attention, float32, and
`expect` is what transformers computed (float32 RoPE angles and softmax), so atol 1e-5.
After writing, each folder is reloaded with from_pretrained and rerun: the reloaded model
must reproduce `expect` (this checks the config.json round trip, and the older
rope_theta + rope_scaling form of llama_yarn_v4).
This script (and transformers) is a generator-side dependency only.
"""

import inspect
import json
import math
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch
import transformers
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_layers import attention, capture_attention, expectations  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "models"
WORDS = ("the cat sat on a warm mat while rain fell over quiet old town and every dog slept near fire "
         "but one bird sang softly to morning light across green hills under").split()
VOCAB = 32
assert len(WORDS) == VOCAB
TOL = 1e-5
VERSION = transformers.__version__
torch.set_num_threads(1)
transformers.utils.logging.disable_progress_bar()

# Shared tiny sizes: 4 query heads, 2 KV heads (GQA), head_dim 8, 2 layers, vocab 32.
# Where the config has a head_dim field it is set explicitly and hidden_size is 16, so
# that heads * head_dim (32) differs from hidden_size; where it has none (Qwen2, OLMo 2,
# Phi-3) hidden_size is 32 and head_dim = hidden_size / heads = 8.
SMALL = dict(vocab_size=VOCAB, hidden_size=16, head_dim=8, intermediate_size=32, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2)
NO_HEAD_DIM = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=32, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2)
SUMMARY = []


def randomise(model, seed, scale=0.3):
    """Every parameter random from a fixed seed: N(0, scale²) for projections, embeddings and
    biases; RMSNorm weights 1 + 0.3 N(0, 1) (w·x/rms) or 0.2 N(0, 1) for Gemma's (1 + w)·x/rms,
    so that no norm (q_norm and k_norm included) is the identity."""
    torch.manual_seed(seed)
    norms = {id(p) for m in model.modules() if "RMSNorm" in type(m).__name__ for p in m.parameters(recurse=False)}
    norms |= {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.LayerNorm)}
    gemma = model.config.model_type.startswith("gemma")
    with torch.no_grad():
        for p in model.parameters():
            if id(p) in norms:
                p.copy_(torch.randn_like(p) * 0.2 if gemma else 1 + torch.randn_like(p) * 0.3)
            else:
                p.copy_(torch.randn_like(p) * scale)
    return model.eval()


def build(cls, config, seed, scale=0.3):
    config._attn_implementation = "eager"
    return randomise(cls(config).to(torch.float32), seed, scale)


def random_ids(n, seed):
    return torch.randint(0, VOCAB, (1, n), generator=torch.Generator().manual_seed(seed))


def run_layer(model, ids, layer):
    """capture_attention() of layer's attention: its hidden_states input, its output (BLOOM:
    its dense output, before BloomAttention's own residual add) and its weights."""
    seen = capture_attention(model, layer, lambda: model(ids))
    assert "weights" in seen, "the eager attention returned no weights"
    return seen


def problem(title, ids, layer, seen, npy):
    return {"title": title,
            "tokens": [WORDS[i] for i in ids[0].tolist()],
            "checkpoint": {"model": ".", "layer": layer},
            "X": {"npy": npy},
            "expect": expectations(seen, TOL, TOL)}


def clean(folder):
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.iterdir():
        stale.unlink()


def write_files(folder, problems):
    """problems: {layer: (problem file name, npy name, problem dict, seen)}."""
    for layer, (pname, npy, prob, seen) in problems.items():
        np.save(folder / npy, seen["x"][0].numpy())
        (folder / pname).write_text(json.dumps(prob, indent=1) + "\n")


def save(name, model, ids, what, layers, extra=""):
    """Save the model as save_pretrained writes it, then hidden*.npy and problem*.json for
    each layer in `layers` (the first is problem.json/hidden.npy, the others
    problem_layerL.json/hidden_layerL.npy), and record a summary row."""
    folder = OUT / name
    clean(folder)
    model.save_pretrained(folder, safe_serialization=True)
    for f in folder.iterdir():
        if f.name not in ("config.json", "model.safetensors"):
            f.unlink()
    cfg = model.config
    problems = {}
    for k, layer in enumerate(layers):
        seen = run_layer(model, ids, layer)
        kind = cfg.layer_types[layer] if getattr(cfg, "layer_types", None) else (
            "sliding_attention" if getattr(cfg, "sliding_window", None) else "full_attention")
        kv_heads = getattr(cfg, "num_key_value_heads", cfg.num_attention_heads)  # none in GPT-NeoX's, BLOOM's
        title = (f"{type(model).__name__.replace('ForCausalLM', '')} (tiny, {cfg.num_attention_heads} query heads, "
                 f"{kv_heads} KV heads, {what}{'; this layer ' + kind.replace('_attention', '') if extra == 'kinds' else ''}), "
                 f"layer {layer}, transformers {VERSION}, float32, eager")
        pname, npy = ("problem.json", "hidden.npy") if k == 0 else (f"problem_layer{layer}.json", f"hidden_layer{layer}.npy")
        problems[layer] = (pname, npy, problem(title, ids, layer, seen, npy), seen)
        SUMMARY.append({"folder": name, "file": pname, "n": ids.shape[1], "layer": layer, "kind": kind,
                        "rope": rope_summary(cfg, kind), "max_final": float(seen["y"].abs().max())})
    write_files(folder, problems)
    return folder, problems


DECODE = []


def decode(name, model, ids, problems, same_as_full):
    """problem_decode.json and hidden_decode.npy for the first layer of `problems`: the model
    run token by token with a DynamicCache(config=model.config), one token a step (position t),
    catching layer L's attention input and output at every step. same_as_full: assert the rows
    equal the full pass's `final` within TOL, otherwise that they differ by more than 1e-4. The
    folder is then reloaded with from_pretrained and decoded again: it must reproduce `expect`."""
    folder = OUT / name
    layer, (_, _, full, seen_full) = next(iter(problems.items()))
    n = ids.shape[1]

    def run(m):
        cache = transformers.DynamicCache(config=m.config)
        # transformers 5.x renames past_key_values to cache (the old name warns)
        kw = "cache" if "cache" in inspect.signature(m.forward).parameters else "past_key_values"
        xs, ys, held, seen_keys = [], [], [], []
        for t in range(n):
            seen = capture_attention(m, layer, lambda: m(ids[:, t:t + 1], **{kw: cache}, use_cache=True,
                                                         position_ids=torch.tensor([[t]]), cache_position=torch.tensor([t])))
            assert seen["x"].shape[1] == 1 and seen["y"].shape[1] == 1
            xs.append(seen["x"][0, 0])
            ys.append(seen["y"][0, 0])
            seen_keys.append(seen["weights"].shape[-1])  # keys the step's attention saw
            held.append(cache.layers[layer].keys.shape[-2])  # keys the cache holds after the step
        return torch.stack(xs), torch.stack(ys), held, seen_keys, type(cache.layers[layer]).__name__

    x, y, held, seen_keys, kind = run(model)
    full_y = seen_full["y"][0]
    dy = float((y.double() - full_y.double()).abs().max())
    dx = float((x.double() - seen_full["x"][0].double()).abs().max())
    if same_as_full:
        assert dy <= TOL, f"{name}: decode differs from the full pass by {dy}"
    else:
        assert dy > 1e-4, f"{name}: decode equals the full pass ({dy})"
    window = getattr(model.config, "sliding_window", None)
    if window:
        assert kind == "DynamicSlidingWindowLayer", kind
        assert max(held) <= window and max(seen_keys) <= window, (held, seen_keys)
        assert seen_keys == [min(t + 1, window) for t in range(n)], seen_keys
    np.save(folder / "hidden_decode.npy", x.numpy())
    prob = {"title": full["title"].replace(", float32, eager", ", float32, eager; decode: token by token with a "
                                           "DynamicCache, one token a step, final of each step"),
            "tokens": full["tokens"],
            "checkpoint": full["checkpoint"],
            "X": {"npy": "hidden_decode.npy"},
            "expect": [{"name": "final", "t": t, "atol": TOL, "rtol": TOL, "data": [float(v) for v in y[t].double().tolist()]}
                       for t in range(n)]}
    (folder / "problem_decode.json").write_text(json.dumps(prob, indent=1) + "\n")
    reloaded = transformers.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager",
                                                                 dtype=torch.float32).eval()
    # from_pretrained leaves the parameters in the safetensors file's memory map, where a
    # one-row matmul may take another SIMD path (~1e-6 from the aligned copy): copy them.
    with torch.no_grad():
        for p in reloaded.parameters():
            p.data = p.data.clone()
    x2, y2, _, _, _ = run(reloaded)
    reload_diff = max(float((x2 - x).abs().max()), float((y2 - y).abs().max()))
    assert reload_diff <= 1e-6, f"{name}: the reloaded model decodes differently by {reload_diff}"
    DECODE.append({"folder": name, "layer": layer, "n": n, "cache": kind, "held": held, "seen": seen_keys,
                   "dx": dx, "dy": dy, "reload": reload_diff})


def rope_summary(cfg, kind):
    rp = getattr(cfg, "rope_parameters", None)
    if rp is None:
        return "none (absolute)" if cfg.model_type in ("gpt2", "bert") else "none (ALiBi)"
    if kind in rp:  # nested by layer type (Gemma 3)
        rp = rp[kind]
    s = f"{rp.get('rope_type', 'default')} θ={rp.get('rope_theta')}"
    if rp.get("partial_rotary_factor", 1.0) != 1.0:
        s += f" partial={rp['partial_rotary_factor']}"
    return s


def reload_check(folder, ids, problems):
    """from_pretrained(folder) must give the same attention output and weights."""
    auto = transformers.AutoModel if folder.name.startswith("bert") else transformers.AutoModelForCausalLM
    model = auto.from_pretrained(folder, attn_implementation="eager", dtype=torch.float32).eval()
    worst = 0.0
    for layer, (_, _, prob, _) in problems.items():
        seen = run_layer(model, ids, layer)
        for e, got in zip(prob["expect"], (seen["y"][0], seen["weights"][0, 0])):
            worst = max(worst, float((got.double() - torch.tensor(e["data"], dtype=torch.float64)).abs().max()))
    assert worst <= 1e-6, f"{folder.name}: reloaded model differs from expect by {worst}"
    return worst


def rope_json(folder):
    c = json.loads((folder / "config.json").read_text())
    keys = ("rope_parameters", "rope_scaling", "rope_theta", "partial_rotary_factor", "max_position_embeddings",
            "original_max_position_embeddings", "layer_types", "sliding_window", "use_sliding_window",
            "max_window_layers", "query_pre_attn_scalar", "attn_logit_softcapping", "head_dim", "rope_interleave",
            "rotary_pct", "rotary_emb_base")
    return {k: c[k] for k in keys if k in c}


@contextmanager
def logits_recorder(module, out):
    """Wrap a modeling module's eager_attention_forward to record max |q·k·scaling| (before
    any softcap) per call, to show that the softcap acts."""
    original = module.eager_attention_forward

    def wrapped(attn, query, key, value, attention_mask, *args, **kwargs):
        k = module.repeat_kv(key, attn.num_key_value_groups)
        out.append(float((torch.matmul(query, k.transpose(2, 3)) * kwargs["scaling"]).abs().max()))
        return original(attn, query, key, value, attention_mask, *args, **kwargs)

    module.eager_attention_forward = wrapped
    try:
        yield
    finally:
        module.eager_attention_forward = original


def llama(name, rope, what, n, seed, bias=False, max_pos=32):
    config = transformers.LlamaConfig(**SMALL, max_position_embeddings=max_pos, attention_bias=bias, rope_parameters=rope)
    model = build(transformers.LlamaForCausalLM, config, seed)
    ids = random_ids(n, seed)
    folder, problems = save(name, model, ids, what, [1])
    rot = model.model.rotary_emb
    print(f"  {name}: inv_freq before the run {rot.original_inv_freq.tolist()}, "
          f"used {rot.inv_freq.tolist()}, attention_scaling {rot.attention_scaling}")
    return model, ids, folder, problems


def llama_linear():
    return llama("llama_linear", {"rope_type": "linear", "factor": 2.0, "rope_theta": 100.0},
                 "RoPE linear scaling factor 2, theta 100, q/k/v/o biases", 8, 11, bias=True)


def llama_dynamic():
    # Dynamic NTK reads config.max_position_embeddings as the original context (no
    # original_max_position_embeddings key in its rope_parameters); n = 9 > 4.
    r = llama("llama_dynamic", {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0},
              "RoPE dynamic NTK factor 2, max_position_embeddings 4, n = 9 so the base grows", 9, 12, max_pos=4)
    d = 8
    base = 10000.0 * (2.0 * 9 / 4 - 1) ** (d / (d - 2))
    expect = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    print(f"  llama_dynamic: base' = 10000·(2·9/4 − 1)^(8/6) = {base:.3f}; formula inv_freq {expect.tolist()}")
    return r


def llama_yarn():
    return llama("llama_yarn", {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4, "rope_theta": 100.0},
                 "RoPE yarn factor 4, original context 4, theta 100, attention_factor 0.1 ln 4 + 1", 8, 13, max_pos=16)


def llama3_scaling():
    # original_max_position_embeddings 32, not 8: a llama3 "high-frequency" band needs
    # wavelength 2π/inv_freq < original/high_freq_factor, and the shortest wavelength is
    # 2π (inv_freq 1), so with high_freq_factor 4 the original context must exceed 8π ≈ 25.1.
    rope = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 32, "rope_theta": 500.0}
    r = llama("llama3_scaling", rope, "RoPE llama3 factor 8, low 1, high 4, original context 32, theta 500: "
              "one frequency in each band (high, medium) and two in the low band", 8, 14, max_pos=256)
    d, orig = 8, 32
    inv = 1.0 / 500.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    for i, f in enumerate(inv.tolist()):
        wl = 2 * math.pi / f
        band = "high (kept)" if wl < orig / 4.0 else "low (÷ factor)" if wl > orig / 1.0 else "medium (smoothed)"
        print(f"  llama3_scaling: pair {i}: inv_freq {f:.6f}, wavelength {wl:.2f} "
              f"(high below {orig / 4.0}, low above {orig / 1.0}): {band}")
    return r


def llama_yarn_v4(yarn_folder):
    """llama_yarn's files, with config.json in the transformers 4 form: rope_theta and
    rope_scaling at the top level, no rope_parameters."""
    folder = OUT / "llama_yarn_v4"
    clean(folder)
    config = json.loads((yarn_folder / "config.json").read_text())
    rope = dict(config.pop("rope_parameters"))
    config["rope_theta"] = rope.pop("rope_theta")
    config["rope_scaling"] = rope
    (folder / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    (folder / "model.safetensors").write_bytes((yarn_folder / "model.safetensors").read_bytes())
    for f in ("hidden.npy",):
        (folder / f).write_bytes((yarn_folder / f).read_bytes())
    prob = json.loads((yarn_folder / "problem.json").read_text())
    prob["title"] = prob["title"].replace("attention_factor 0.1 ln 4 + 1", "attention_factor 0.1 ln 4 + 1; config.json in the "
                                          "older rope_theta + rope_scaling form")
    (folder / "problem.json").write_text(json.dumps(prob, indent=1) + "\n")
    row = dict(next(r for r in SUMMARY if r["folder"] == "llama_yarn"))
    row["folder"] = "llama_yarn_v4"
    SUMMARY.append(row)
    return folder, prob


def mistral_window():
    config = transformers.MistralConfig(**SMALL, max_position_embeddings=32, sliding_window=3)
    model = build(transformers.MistralForCausalLM, config, 21)
    ids = random_ids(7, 21)
    return model, ids, *save("mistral_window", model, ids, "sliding window 3 on every layer", [1])


def qwen2_window():
    # Qwen2Config: layer i is sliding iff use_sliding_window and i >= max_window_layers,
    # so with max_window_layers 1: layer 0 full, layer 1 sliding.
    config = transformers.Qwen2Config(**NO_HEAD_DIM, max_position_embeddings=32, use_sliding_window=True,
                                      sliding_window=3, max_window_layers=1)
    assert config.layer_types == ["full_attention", "sliding_attention"], config.layer_types
    model = build(transformers.Qwen2ForCausalLM, config, 22)
    ids = random_ids(7, 22)
    return model, ids, *save("qwen2_window", model, ids, "q/k/v biases, sliding window 3 from layer max_window_layers = 1 on",
                             [1, 0], extra="kinds")


def qwen3_qknorm():
    config = transformers.Qwen3Config(**SMALL, max_position_embeddings=32)
    model = build(transformers.Qwen3ForCausalLM, config, 23)
    ids = random_ids(6, 23)
    return model, ids, *save("qwen3_qknorm", model, ids, "q_norm/k_norm RMSNorm per head before RoPE", [1])


def olmo2_qknorm():
    config = transformers.Olmo2Config(**NO_HEAD_DIM, max_position_embeddings=32, pad_token_id=None, eos_token_id=None)
    model = build(transformers.Olmo2ForCausalLM, config, 24)
    ids = random_ids(6, 24)
    return model, ids, *save("olmo2_qknorm", model, ids, "q_norm/k_norm RMSNorm over the whole projection, no input norm", [1])


def gemma2():
    config = transformers.Gemma2Config(**SMALL, max_position_embeddings=32, query_pre_attn_scalar=24,
                                       attn_logit_softcapping=5.0, sliding_window=3,
                                       layer_types=["sliding_attention", "full_attention"])
    model = build(transformers.Gemma2ForCausalLM, config, 25, scale=0.5)  # logits past the cap of 5
    ids = random_ids(7, 25)
    seen = []
    with logits_recorder(transformers.models.gemma2.modeling_gemma2, seen):
        r = save("gemma2", model, ids, "scale query_pre_attn_scalar^-1/2 = 24^-1/2, logit softcap 5, sliding window 3 on "
                 "layer 0", [1, 0], extra="kinds")
    print(f"  gemma2: max |q·k·scaling| before the softcap, per layer call: {[round(x, 3) for x in seen]}")
    return model, ids, *r


def gemma3_text():
    config = transformers.Gemma3TextConfig(
        **SMALL, max_position_embeddings=32, query_pre_attn_scalar=24, sliding_window=3,
        layer_types=["sliding_attention", "full_attention"], sliding_window_pattern=2,  # the same rule, both saved
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10.0},
                         "full_attention": {"rope_type": "default", "rope_theta": 1000.0}})
    model = build(transformers.Gemma3ForCausalLM, config, 26)
    ids = random_ids(7, 26)
    return model, ids, *save("gemma3_text", model, ids, "q_norm/k_norm (1 + w) per head, scale 24^-1/2, RoPE theta 10 on "
                             "sliding layers and 1000 on full, sliding window 3 on layer 0", [1, 0], extra="kinds")


def gemma3_multimodal(text_folder, model, ids):
    """gemma3_text's weights under model.language_model., config.json as a Gemma3
    multimodal config wrapping the text config; problem.json for layer 1 only."""
    folder = OUT / "gemma3_multimodal"
    clean(folder)
    text = json.loads((text_folder / "config.json").read_text())
    text.pop("architectures", None)
    text.pop("transformers_version", None)
    assert text["model_type"] == "gemma3_text"
    config = {"model_type": "gemma3", "text_config": text, "architectures": ["Gemma3ForConditionalGeneration"]}
    (folder / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    tensors = load_file(str(text_folder / "model.safetensors"))
    assert all(k.startswith("model.") for k in tensors), [k for k in tensors if not k.startswith("model.")]
    save_file({"model.language_model." + k[len("model."):]: v for k, v in tensors.items()}, str(folder / "model.safetensors"),
              metadata={"format": "pt"})
    (folder / "hidden.npy").write_bytes((text_folder / "hidden.npy").read_bytes())
    prob = json.loads((text_folder / "problem.json").read_text())
    prob["title"] = prob["title"].replace("Gemma3 (tiny", "Gemma3 multimodal config wrapping the text model (tiny")
    (folder / "problem.json").write_text(json.dumps(prob, indent=1) + "\n")
    row = dict(next(r for r in SUMMARY if r["folder"] == "gemma3_text" and r["layer"] == 1))
    row["folder"] = "gemma3_multimodal"
    SUMMARY.append(row)
    # The wrapped config parses to the same text config, and the renamed tensors, loaded
    # back under the text model's names, reproduce the expect.
    parsed = transformers.Gemma3Config.from_pretrained(folder).text_config
    assert parsed.layer_types == model.config.layer_types and parsed.rope_parameters == model.config.rope_parameters
    renamed = load_file(str(folder / "model.safetensors"))
    text_model = transformers.Gemma3ForCausalLM(parsed).to(torch.float32).eval()
    text_model.config._attn_implementation = "eager"
    missing, unexpected = text_model.load_state_dict({"model." + k[len("model.language_model."):]: v for k, v in renamed.items()},
                                                     strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    text_model.tie_weights()
    seen = run_layer(text_model, ids, 1)
    worst = float((seen["y"][0].double() - torch.tensor(prob["expect"][0]["data"], dtype=torch.float64)).abs().max())
    assert worst <= 1e-6, worst
    return folder


def qwen3_sharded(qwen3_folder, model, ids):
    """qwen3_qknorm's model saved in shards of at most 20 kB (model.safetensors.index.json
    and its shards), with the same hidden states and expect: the sharded form of a checkpoint."""
    folder = OUT / "qwen3_sharded"
    clean(folder)
    model.save_pretrained(folder, safe_serialization=True, max_shard_size="20KB")
    for extra in folder.iterdir():
        if not (extra.name.endswith(".safetensors") or extra.name in ("config.json", "model.safetensors.index.json")):
            extra.unlink()
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 1, "expected several shards"
    (folder / "hidden.npy").write_bytes((qwen3_folder / "hidden.npy").read_bytes())
    prob = json.loads((qwen3_folder / "problem.json").read_text())
    prob["title"] = prob["title"].replace("Qwen3 (tiny", "Qwen3 in shards (tiny")
    (folder / "problem.json").write_text(json.dumps(prob, indent=1) + "\n")
    return folder


def phi3():
    config = transformers.Phi3Config(**NO_HEAD_DIM, max_position_embeddings=32, original_max_position_embeddings=32,
                                     partial_rotary_factor=0.5, pad_token_id=None, bos_token_id=None, eos_token_id=None)
    model = build(transformers.Phi3ForCausalLM, config, 27)
    ids = random_ids(6, 27)
    return model, ids, *save("phi3", model, ids, "fused qkv_proj, partial rotary factor 0.5 (first 4 of 8 dims rotate)", [1])


def gpt_neox():
    # GPT-NeoX: no GQA, head_dim = hidden / heads = 8; rotary_pct 0.5 so rotate_half turns the
    # first 4 of the 8 dims (pairs (0, 2) and (1, 3)) and dims 4..7 pass; fused query_key_value
    # laid out [head][q, k, v][d]; biases on query_key_value and dense.
    config = transformers.GPTNeoXConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=32, num_hidden_layers=2,
                                        num_attention_heads=4, max_position_embeddings=32, rotary_pct=0.5,
                                        rotary_emb_base=100.0)
    assert config.rope_parameters["partial_rotary_factor"] == 0.5 and config.rope_parameters["rope_theta"] == 100.0
    model = build(transformers.GPTNeoXForCausalLM, config, 31)
    assert attention(model, 1).rotary_ndims == 4
    ids = random_ids(7, 31)
    return model, ids, *save("gpt_neox", model, ids, "fused query_key_value [head][q, k, v][d], biases, rotary_pct 0.5 "
                             "(first 4 of 8 dims turn, rotate_half), theta 100, parallel residual", [1])


def bloom():
    # BLOOM: ALiBi, no RoPE; 6 heads, so the slopes are 2^-2..2^-8 for the first 4 (the
    # closest power of 2) and 2^-1, 2^-3 for the other 2. `final` is the dense output,
    # before BloomAttention's own residual add.
    config = transformers.BloomConfig(vocab_size=VOCAB, hidden_size=48, n_layer=2, n_head=6)
    model = build(transformers.BloomForCausalLM, config, 32)
    slopes = transformers.models.bloom.modeling_bloom._get_alibi_slopes(6, torch.device("cpu"))
    assert torch.equal(slopes, torch.tensor([2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8, 2.0 ** -1, 2.0 ** -3]))
    ids = random_ids(7, 32)
    r = save("bloom", model, ids, "ALiBi with 6 heads (slopes 1/4, 1/16, 1/64, 1/256, 1/2, 1/8), fused query_key_value "
             "[head][q, k, v][d], biases; final = dense output before the residual add", [1])
    print(f"  bloom: ALiBi slopes {slopes.tolist()}")
    return model, ids, *r


def deepseek_v3(name, what, seed, q_lora_rank=12, rope=None, max_pos=32):
    # MLA: q via q_a_proj -> q_a_layernorm -> q_b_proj (or q_proj when q_lora_rank is None),
    # per head [nope 8 | rope 4]; kv_a_proj_with_mqa gives [latent 8 | k_rope 4], the latent
    # through kv_a_layernorm and kv_b_proj to per head [k_nope 8 | v 8], k_rope shared by all
    # heads; rope_interleave true (the default). first_k_dense_replace past the last layer, so
    # every MLP is dense and no MoE tensor is saved.
    config = transformers.DeepseekV3Config(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=32, moe_intermediate_size=8, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=8, q_lora_rank=q_lora_rank, qk_nope_head_dim=8,
        qk_rope_head_dim=4, v_head_dim=8, n_routed_experts=4, n_shared_experts=1, n_group=1, topk_group=1,
        num_experts_per_tok=2, first_k_dense_replace=100, max_position_embeddings=max_pos,
        rope_parameters=rope or {"rope_type": "default", "rope_theta": 100.0})
    assert config.rope_interleave is True
    model = build(transformers.DeepseekV3ForCausalLM, config, seed)
    assert not any("experts" in k or "gate." in k for k in model.state_dict()), "a MoE tensor"
    ids = random_ids(7, seed)
    r = save(name, model, ids, what, [1])
    attn, rot = attention(model, 1), model.model.rotary_emb
    print(f"  {name}: scaling {attn.scaling!r} (12^-1/2 = {12 ** -0.5!r}), inv_freq {rot.inv_freq.tolist()}, "
          f"attention_scaling {rot.attention_scaling}")
    return model, ids, *r


def deepseek_v3_lora():
    return deepseek_v3("deepseek_v3", "MLA: q_lora_rank 12, kv_lora_rank 8, qk_nope 8, qk_rope 4 (interleaved, theta 100), "
                       "v 8", 33)


def deepseek_v3_noqlora():
    return deepseek_v3("deepseek_v3_noqlora", "MLA without q LoRA (q_proj), kv_lora_rank 8, qk_nope 8, qk_rope 4 "
                       "(interleaved, theta 100), v 8", 34, q_lora_rank=None)


def deepseek_v3_yarn():
    # yarn on the 4 rope dims: with original context 4 the ramp keeps pair 0 and divides pair 1
    # by the factor; mscale = mscale_all_dim makes attention_factor 1 (cos/sin unscaled), and
    # mscale_all_dim folds (0.1 ln 4 + 1)² into the softmax scale.
    rope = {"rope_type": "yarn", "rope_theta": 100.0, "factor": 4.0, "original_max_position_embeddings": 4,
            "mscale": 1.0, "mscale_all_dim": 1.0, "beta_fast": 32.0, "beta_slow": 1.0}
    r = deepseek_v3("deepseek_v3_yarn", "MLA as deepseek_v3, RoPE yarn factor 4, original context 4, mscale = "
                    "mscale_all_dim = 1: scale 12^-1/2 (0.1 ln 4 + 1)^2", 35, rope=rope, max_pos=16)
    scale = 12 ** -0.5 * (0.1 * math.log(4.0) + 1.0) ** 2
    assert abs(attention(r[0], 1).scaling - scale) < 1e-12 and r[0].model.rotary_emb.attention_scaling == 1.0
    return r


def gpt2_directory():
    # GPT-2 from its own config.json (n_layer, n_head, n_embd): Conv1D c_attn stored (in, out)
    # with q | k | v side by side, biases, causal, positions added before layer 0. Its two
    # scale fields: scale_attn_by_inverse_layer_idx divides layer L's scale by L + 1 (so
    # layers 0 and 1 differ), reorder_and_upcast_attn only reorders float16 arithmetic.
    config = transformers.GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=16, n_layer=2, n_head=4,
                                     scale_attn_by_inverse_layer_idx=True, reorder_and_upcast_attn=True, bos_token_id=None,
                                     eos_token_id=None)
    model = build(transformers.GPT2LMHeadModel, config, 36)
    ids = random_ids(7, 36)
    return model, ids, *save("gpt2_directory", model, ids, "Conv1D c_attn, biases, causal, scale_attn_by_inverse_layer_idx "
                             "(layer L's scale ÷ (L + 1)), reorder_and_upcast_attn", [1, 0])


def bert_directory():
    # BERT's encoder from its own config.json: every key read (no causal mask), positions
    # added before layer 0; `final` is the attention output's dense, before its residual
    # add and LayerNorm.
    config = transformers.BertConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=32, max_position_embeddings=32)
    model = build(transformers.BertModel, config, 37)
    ids = random_ids(6, 37)
    return model, ids, *save("bert_directory", model, ids, "encoder, every key read; final = output dense before the "
                             "residual add and LayerNorm", [1])


MAKERS = ("llama_linear", "llama_dynamic", "llama_yarn", "llama3_scaling", "mistral_window", "qwen2_window", "qwen3_qknorm",
          "olmo2_qknorm", "gemma2", "gemma3_text", "phi3", "gpt_neox", "bloom", "deepseek_v3_lora", "deepseek_v3_noqlora",
          "deepseek_v3_yarn", "gpt2_directory", "bert_directory")


def main():
    # Names given on the command line make only those goldens (and none of the derived ones).
    only = sys.argv[1:]
    unknown = sorted(set(only) - set(MAKERS))
    if unknown:
        sys.exit(f"unknown golden(s) {unknown}: choose from {', '.join(MAKERS)}")
    start = time.perf_counter()
    reloads = {}
    made = {}
    for name in only or MAKERS:
        model, ids, folder, problems = globals()[name]()
        made[folder.name] = (model, ids, folder, problems)
        reloads[folder.name] = reload_check(folder, ids, problems)
        if folder.name in ("mistral_window", "llama_dynamic", "deepseek_v3"):
            decode(folder.name, model, ids, problems, same_as_full=folder.name != "llama_dynamic")
    if only:
        print(f"made {', '.join(only)} only ({time.perf_counter() - start:.1f} s)")
        return
    v4_folder, _ = llama_yarn_v4(made["llama_yarn"][2])
    _, ids, _, problems = made["llama_yarn"]
    reloads["llama_yarn_v4"] = reload_check(v4_folder, ids, problems)
    model, ids, text_folder, _ = made["gemma3_text"]
    gemma3_multimodal(text_folder, model, ids)
    model, ids, qwen3_folder, problems = made["qwen3_qknorm"]
    reloads["qwen3_sharded"] = reload_check(qwen3_sharded(qwen3_folder, model, ids), ids, problems)
    reloads["gemma3_multimodal"] = 0.0
    elapsed = time.perf_counter() - start

    print(f"\ntransformers {VERSION}, torch {torch.__version__}")
    print(f"{'folder':19} {'file':22} {'n':>2} {'layer':>5} {'kind':18} {'rope':28} {'max|final|':>10} {'reload diff':>11}")
    for r in SUMMARY:
        print(f"{r['folder']:19} {r['file']:22} {r['n']:2d} {r['layer']:5d} {r['kind']:18} {r['rope']:28} {r['max_final']:10.4f} "
              f"{reloads.get(r['folder'], 0.0):11.2e}")
    print("\nproblem_decode.json (token by token, DynamicCache): max |decode − full| of X and of final; "
          "keys held by layer L's cache after each step, keys its attention saw at each step")
    for r in DECODE:
        print(f"  {r['folder']:15} layer {r['layer']} n {r['n']}: X {r['dx']:.2e}, final {r['dy']:.2e}, reload diff "
              f"{r['reload']:.1e}; {r['cache']} held {r['held']}, saw {r['seen']}")
    for name in sorted({r["folder"] for r in SUMMARY}):
        folder = OUT / name
        sizes = {p.name: p.stat().st_size for p in sorted(folder.iterdir())}
        print(f"{name}: {sizes}\n    rope keys of config.json: {json.dumps(rope_json(folder))}")
    print(f"\nruntime {elapsed:.1f} s")


if __name__ == "__main__":
    main()
