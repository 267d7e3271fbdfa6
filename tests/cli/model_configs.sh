# Models from their own config.json (docs/PROBLEM.md#a-model-directory-checkpointmodel):
# every golden of tools/make_config_goldens.py (tiny random models run by transformers with
# eager attention: its layer's output and head 0's weights; problem_decode.json: the output
# token by token with a KV cache, checked through decode) passes `check`, the JSON says
# what the config resolved, and what the reader would otherwise ignore is refused, exit 2,
# naming the field or the tensor.
source "$SOURCE_DIR/tests/cli/lib.sh"
T=$ATTN_TRACE
M=$SOURCE_DIR/tests/models

goldens=(llama_linear llama_dynamic llama_yarn llama_yarn_v4 llama3_scaling mistral_window qwen2_window qwen3_qknorm qwen3_sharded
         olmo2_qknorm gemma2 gemma3_text gemma3_multimodal phi3 gpt_neox bloom deepseek_v3 deepseek_v3_noqlora deepseek_v3_yarn
         gpt2_directory bert_directory)
for golden in "${goldens[@]}"; do
  for file in "$M/$golden"/problem*.json; do
    case $file in
      */problem_decode.json) steps="decode [0-9]+ steps" ;;  # expect `final` row by row (t): check runs decode
      *) steps="run 2 steps" ;;
    esac
    expect_exit 0 "^PASS .*$(basename "$file") \($steps" -- "$T" check "$file"
  done
done
# The same goldens are not passed by a layer computed without the family's rule: each
# broken on purpose fails (the goldens can tell).
copy() { rm -rf m && cp -r "$M/$1" m; }
edit() {  # edit FILE PYTHON: the JSON in FILE as `c`, changed by PYTHON
  python3 -c "import json, sys; c = json.load(open('$1')); $2; json.dump(c, open('$1', 'w'))"
}
copy gemma2; edit m/config.json "c['query_pre_attn_scalar'] = 8"
expect_exit 1 "^FAIL " -- "$T" check m/problem.json
copy llama_yarn; edit m/config.json "c['rope_parameters']['factor'] = 2.0"
expect_exit 1 "^FAIL " -- "$T" check m/problem.json
copy qwen2_window; edit m/config.json "c['layer_types'] = ['full_attention', 'full_attention']"
expect_exit 1 "^FAIL " -- "$T" check m/problem.json

# What the config resolved, in the JSON.
json=$("$T" run "$M/gemma3_text/problem_layer0.json" --format json)
for fact in '"model_type":"gemma3_text"' '"layer":0' '"layer_type":"sliding_attention"' '"sliding_window":3' '"theta":10\.0' '"type":"default"' \
            '"rotary_dims":8' '"mask_spec":\["causal","window:3"\]'; do
  expect_exit 0 "$fact" -- echo "$json"
done
expect_exit 0 '"type":"yarn","factor":4\.0,"rotary_dims":8,"attention_factor":1\.13862943611' -- "$T" run "$M/llama_yarn/problem.json" --format json
expect_exit 0 '"rotary_dims":4' -- "$T" run "$M/phi3/problem.json" --format json
# BLOOM has ALiBi (6 heads: the slopes for a head count that is not a power of 2), no RoPE.
expect_exit 0 '"rope":null' -- "$T" run "$M/bloom/problem.json" --format json --steps final
copy bloom; edit m/config.json "c['n_head'] = 4; c.pop('num_attention_heads', None)"
expect_exit 1 "^FAIL " -- "$T" check m/problem.json
# GPT-2 and BERT from their own config.json: heads from n_head / num_attention_heads, GPT-2's
# scale rules, BERT's encoder without a causal mask (its is_decoder adds one).
expect_exit 0 'n = 7 queries, m = 7 keys, d_model = 16, 4 heads, d_k = 4, d_v = 4, scale = 0\.25, mask = causal,' -- "$T" run "$M/gpt2_directory/problem.json" --steps final
expect_exit 0 'scale = 0\.5, mask = causal,' -- "$T" run "$M/gpt2_directory/problem_layer0.json" --steps final
expect_exit 0 '"model_type":"gpt2".*"rope":null' -- "$T" run "$M/gpt2_directory/problem.json" --format json --steps final
copy gpt2_directory; edit m/config.json "c['scale_attn_by_inverse_layer_idx'] = False"
expect_exit 1 "^FAIL " -- "$T" check m/problem.json
expect_exit 0 'scale = 0\.5, mask = causal,' -- "$T" run m/problem.json --steps final
copy gpt2_directory; edit m/config.json "c['scale_attn_weights'] = False"
expect_exit 0 'scale = 0\.5, mask = causal,' -- "$T" run m/problem.json --steps final  # 1 / (layer 1 + 1)
copy gpt2_directory; edit m/config.json "c['n_head'] = 2"
expect_exit 1 "^FAIL " -- "$T" check m/problem.json
expect_exit 0 '4 heads, d_k = 4, d_v = 4, scale = 0\.5, mask = none,' -- "$T" run "$M/bert_directory/problem.json" --steps final
copy bert_directory; edit m/config.json "c['is_decoder'] = True"
expect_exit 0 'mask = causal,' -- "$T" run m/problem.json --steps final
expect_exit 1 "^FAIL " -- "$T" check m/problem.json
# A head-by-head fused tensor read as row blocks equals the blocks read one by one.
printf '{"X": {"npy": "%s/gpt_neox/hidden.npy"}, "heads": 1, "W_Q": {"safetensors": "%s/gpt_neox/model.safetensors", "tensor": "gpt_neox.layers.1.attention.query_key_value.weight", "rows": [[0, 8], [24, 32]], "transpose": true}, "W_K": {"safetensors": "%s/gpt_neox/model.safetensors", "tensor": "gpt_neox.layers.1.attention.query_key_value.weight", "rows": [0, 16], "transpose": true}, "W_V": {"safetensors": "%s/gpt_neox/model.safetensors", "tensor": "gpt_neox.layers.1.attention.query_key_value.weight", "rows": [0, 16], "transpose": true}}' "$M" "$M" "$M" "$M" > blocks.json
# columns 8 … 15 of Q are rows 24 … 31 of the tensor: the same numbers as K read from [24, 32]
"$T" run blocks.json --steps q --format csv | tail -n +2 | cut -d, -f10- > blocks.csv
sed -e 's/"rows": \[0, 16\]/"rows": [24, 32]/g' -e 's/"rows": \[\[0, 8\], \[24, 32\]\]/"rows": [24, 32]/' blocks.json > second.json
expect_exit 0 "" -- diff <("$T" run second.json --steps q --format csv | tail -n +2 | cut -d, -f2-) blocks.csv
expect_exit 0 "" -- test -s blocks.csv
expect_exit 2 '\$\.W_Q\.rows: expected \[first, last\) or a list of such ranges' -- "$T" run <(sed 's/\[\[0, 8\], \[24, 32\]\]/[[0, 8], [24]]/' blocks.json)
# qk-norm's steps sit between the projections and RoPE; a qk-norm layer explains its cells.
expect_exit 0 "^q_normed  Q_n = Q / √\(mean\(Q²\) \+ 1e-06\) · w, the mean over each head's d_k columns  \(6, 32\)" -- "$T" run "$M/qwen3_qknorm/problem.json" --steps q_normed --color never
expect_exit 0 "root mean square of its head's d_k values" -- "$T" explain "$M/qwen3_qknorm/problem.json" --cell 'q_normed[1,2]'
expect_exit 0 "root mean square of the whole row" -- "$T" explain "$M/olmo2_qknorm/problem.json" --cell 'k_normed[0,0]'
expect_exit 0 "column 6 is past the 4 rotary columns" -- "$T" explain "$M/phi3/problem.json" --cell 'q_rot[2,6]'
# --mask adds to the model's own mask; --scale is the config's to decide.
expect_exit 0 '"mask_spec":\["causal","window:2"\]' -- "$T" run "$M/qwen3_qknorm/problem.json" --mask window:2 --format json --steps final
expect_exit 2 "attn-trace: error: --scale 0.5: the scale of a model's layer is what its config.json decides" -- "$T" run "$M/gemma2/problem.json" --scale 0.5
# decode, tiled and the fast path read the same layer and agree with the full pass.
expect_exit 0 '"max_abs_diff_vs_full":[0-9.e-]+' -- "$T" decode "$M/mistral_window/problem.json" --format json --steps final
expect_exit 0 'max_abs_diff_vs_full = [0-9.e-]+$' -- "$T" tiled "$M/gemma3_text/problem_layer0.json" --steps final --color never
expect_exit 0 '^final  Y = O_cat W_O  \(6, 32\)' -- "$T" run "$M/phi3/problem.json" --fast --steps final --color never
# decode of a model problem counts the whole model's cache as cost --model does: its layers
# (each sliding one holding at most its window, MLA's latent), the checkpoint's bytes,
# --bytes over both; decode's own --layers counts this layer that many times instead.
same_cache() {  # same_cache GOLDEN [--bytes B]
  local keys decode m
  decode=$("$T" decode "$M/$1/problem.json" --format json --steps final "${@:2}")
  m=$(python3 -c "import json, sys; print(int(json.load(sys.stdin)['kv_cache_tokens']))" <<< "$decode")
  keys=$(python3 - "$decode" "$("$T" cost --model "$M/$1" --n "$m" --format json "${@:2}")" <<'PY'
import json, sys
decode, cost = json.loads(sys.argv[1]), json.loads(sys.argv[2])
pairs = [("kv_cache_layers", len(cost["layers"])), ("kv_cache_bytes_per_number", cost["bytes"]),
         ("kv_cache_elements_per_token", cost["kv_cache_numbers_per_token"]), ("kv_cache_bytes_per_token", cost["kv_cache_bytes_per_token"]),
         ("kv_cache_tokens", cost["tokens"]), ("kv_cache_bytes_total", cost["kv_cache_bytes_total"])]
print(" ".join(f"{k}={decode[k]:g}/{v:g}" for k, v in pairs if decode[k] != v) or "same")
PY
)
  expect_exit 0 "^same$" -- echo "$keys"
}
for golden in mistral_window gemma2 qwen2_window deepseek_v3; do
  same_cache "$golden"
  same_cache "$golden" --bytes 2
done
expect_exit 0 'KV cache of the whole gemma2 model, counted as cost counts its directory: 2 layers \(1 sliding: each holds at most its window\), 64 numbers per token · 4 bytes = 256 bytes per token; 7 tokens' -- "$T" decode "$M/gemma2/problem.json" --steps final --color never
expect_exit 0 '"kv_cache_layers":32,' -- "$T" decode "$M/gemma2/problem.json" --layers 32 --format json --steps final
expect_exit 0 '"kv_cache_bytes_per_number":4,' -- "$T" decode "$M/mistral_window/problem.json" --layers 2 --format json --steps final  # the checkpoint's F32
expect_exit 2 "bert_directory/problem\.json: a bert layer lets every query read every key" -- "$T" decode "$M/bert_directory/problem.json"
# bert-base-uncased's checkpoint names its LayerNorm parameters gamma and beta: left as the newer names are.
copy bert_directory
python3 - <<'PY'
import json, struct
raw = open("m/model.safetensors", "rb").read()
size = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + size])
renamed = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v for k, v in header.items()}
text = json.dumps(renamed).encode()
text += b" " * (-len(text) % 8)
open("m/model.safetensors", "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + size:])
PY
expect_exit 0 "^PASS " -- "$T" check m/problem.json
expect_exit 0 '"ignored_tensors":\["encoder\.layer\.1\.attention\.output\.LayerNorm\.beta","encoder\.layer\.1\.attention\.output\.LayerNorm\.gamma"\]' -- "$T" run m/problem.json --format json --steps final

# Nothing silently ignored: refused GOLDEN FILE PYTHON PATTERN edits FILE of a copy of
# GOLDEN (the JSON as `c`) and expects check to refuse it, exit 2, with PATTERN.
refused() {
  copy "$1"; edit "m/$2" "$3"
  expect_exit 2 "$4" -- "$T" check m/problem.json
}
refused qwen3_qknorm problem.json "c['heads'] = 4" 'm/problem.json: \$\.heads: given beside "checkpoint": \{"model": …\}, whose config.json decides it'
refused qwen3_qknorm config.json "c['model_type'] = 'qwen9'" 'config.json: \$\.model_type: "qwen9" is not a family attn-trace reads from a model directory \(it reads llama, mistral'
refused llama_yarn config.json "c['rope_parameters']['rope_type'] = 'longrope'" 'config.json: \$\.rope_parameters\.rope_type: RoPE scaling "longrope" is not implemented'
refused llama_yarn config.json "c['rope_parameters']['truncate'] = False" 'rope_parameters\.truncate: yarn without truncation'
refused llama_yarn_v4 config.json "c['rope_scaling']['short_factor'] = [1, 2]" 'config.json: \$\.rope_scaling\.short_factor: a RoPE parameter attn-trace does not implement'
refused phi3 config.json "c['rope_parameters']['rope_type'] = 'yarn'; c['rope_parameters']['factor'] = 2.0" 'RoPE scaling "longrope \(phi3.s yarn\)" is not implemented'
refused gemma3_text config.json "c['use_bidirectional_attention'] = True" '\$\.use_bidirectional_attention: bidirectional attention'
refused gpt2_directory config.json "c['add_cross_attention'] = True" '\$\.add_cross_attention: a GPT-2 with cross-attention layers is not read'
refused bert_directory config.json "c['position_embedding_type'] = 'relative_key'" '\$\.position_embedding_type: relative position embeddings change BERT.s scores'
refused gemma3_multimodal config.json "c['text_config']['layer_types'][1] = 'chunked_attention'" 'config.json: \$\.text_config\.layer_types: layer 1 has attention "chunked_attention"'
refused qwen3_qknorm problem.json "c['checkpoint']['layer'] = 2" '\$\.checkpoint\.layer: the model has 2 layers \(0 to 1\), found 2'
refused mistral_window problem.json "c['checkpoint']['model'] = 'nowhere'" '\$\.checkpoint\.model: "nowhere" is not a folder'
refused qwen2_window config.json "c['sliding_window'] = None" '\$\.sliding_window: layer 1 is a sliding layer, but the config gives no window'
# A config whose head_dim or head counts disagree with the tensors' shapes would trace the
# wrong head width and scale: refused, both named.
refused llama_linear config.json "c['head_dim'] = 4" 'q_proj\.weight has shape \(32, 16\), expected \(16, 16\) from config\.json: 4 heads of head_dim 4'
refused llama_linear config.json "c['num_key_value_heads'] = 1" 'k_proj\.weight has shape \(16, 16\), expected \(8, 16\) from config\.json: 1 KV heads of head_dim 8'
refused qwen3_qknorm config.json "c['num_attention_heads'] = c['num_key_value_heads']" 'q_proj\.weight has shape .* expected .* from config\.json'
expect_exit 2 'q_proj\.weight has shape \(32, 16\), expected \(16, 16\) from config\.json' -- "$T" cost --model m --n 10  # cost --model counts the same layer
# A true/false field spelt as a string is refused: "true" was read as false, a full layer.
refused qwen2_window config.json "c['use_sliding_window'] = 'true'; c.pop('layer_types')" 'config\.json: \$\.use_sliding_window: expected true or false \(or 1 / 0\), found the string "true"'
refused deepseek_v3 config.json "c['rope_interleave'] = 'no'" 'config\.json: \$\.rope_interleave: expected true or false'
copy mistral_window; rm m/model.safetensors
expect_exit 2 '"\." holds neither model\.safetensors nor model\.safetensors\.index\.json' -- "$T" check m/problem.json
copy qwen3_sharded; rm m/model.safetensors.index.json
expect_exit 2 '"\." holds neither model\.safetensors nor model\.safetensors\.index\.json' -- "$T" check m/problem.json
copy qwen3_sharded; edit m/model.safetensors.index.json "c['weight_map']['model.layers.1.self_attn.q_proj.weight'] = 'model-00003-of-00002.safetensors'"
expect_exit 2 'model-00003-of-00002\.safetensors' -- "$T" check m/problem.json
copy mistral_window; rm m/config.json
expect_exit 2 'm/config\.json: cannot open the model.s config' -- "$T" check m/problem.json
copy mistral_window; echo '{"model_type": "mistral",' > m/config.json
expect_exit 2 'm/config\.json: malformed JSON at line 2' -- "$T" check m/problem.json
copy mistral_window; edit m/config.json "c['sliding_window'] = None; c['layer_types'] = ['sliding_attention'] * 2"
expect_exit 1 "" -- "$T" check m/problem.json  # mistral reads no layer_types: without a window the layer is full
# A tensor under the layer's attention that the family does not read: refused, named; a
# buffer the family knowingly leaves: listed in ignored_tensors.
copy llama_linear
python3 - <<'EOF'
import json, struct
def rewrite(path, extra):
    raw = open(path, 'rb').read()
    size = struct.unpack('<Q', raw[:8])[0]
    header = json.loads(raw[8:8 + size])
    data = raw[8 + size:]
    end = len(data)
    for name in extra:
        header[name] = {"dtype": "F32", "shape": [4], "data_offsets": [end, end + 16]}
        end += 16
    blob = json.dumps(header).encode()
    blob += b' ' * (-len(blob) % 8)
    open(path, 'wb').write(struct.pack('<Q', len(blob)) + blob + data + b'\0' * (16 * len(extra)))
rewrite('m/model.safetensors', ['model.layers.1.self_attn.q_norm.weight'])
EOF
expect_exit 2 'm/problem.json: \$\.checkpoint: \.: model\.layers\.1\.self_attn\.q_norm\.weight is under layer 1.s attention, but the llama family does not read it' -- "$T" check m/problem.json
copy qwen3_qknorm
python3 - <<'EOF'
import json, struct
raw = open('m/model.safetensors', 'rb').read()
size = struct.unpack('<Q', raw[:8])[0]
header = json.loads(raw[8:8 + size]); data = raw[8 + size:]
header['model.layers.1.self_attn.rotary_emb.inv_freq'] = {"dtype": "F32", "shape": [4], "data_offsets": [len(data), len(data) + 16]}
blob = json.dumps(header).encode(); blob += b' ' * (-len(blob) % 8)
open('m/model.safetensors', 'wb').write(struct.pack('<Q', len(blob)) + blob + data + b'\0' * 16)
EOF
expect_exit 0 '"ignored_tensors":\["model\.layers\.1\.self_attn\.rotary_emb\.inv_freq"\]' -- "$T" run m/problem.json --format json --steps final
# The family route (docs/PROBLEM.md#real-model-weights-npy-safetensors-checkpoint) refuses a llama layer with qk-norm and points to the model directory.
copy qwen3_qknorm
edit m/problem.json "c['checkpoint'] = {'safetensors': 'model.safetensors', 'family': 'llama', 'layer': 1}; c['heads'] = 4; c['kv_heads'] = 2; c['mask'] = 'causal'; c['rope'] = {'base': 10000}"
expect_exit 2 'layer 1 has q_norm and k_norm tensors .* give the model directory instead, "checkpoint": \{"model": DIR, "layer": 1\}' -- "$T" check m/problem.json

# decode on a sliding layer keeps a rolling cache of W = 3 keys, one evicted per step once full.
"$T" decode "$M/mistral_window/problem.json" --format json > rolling.json
expect_exit 0 "" -- python3 -c "
import json
d = json.load(open('rolling.json'))
for s in d['steps']:
    if s['name'] in ('k_cache', 'v_cache') and 't' in s:
        t = s['t']
        assert s['shape'][0] == min(t + 1, 3), (t, s['shape'])
        assert s['evicted'] == ([t - 3] if t >= 3 else []), (t, s['evicted'])
assert d['max_abs_diff_vs_full'] < 1e-12
assert d['kv_cache_tokens'] == 7  # the model's cache: each of its sliding layers holds 3 of the 7
assert d['kv_cache_bytes_total'] == d['kv_cache_bytes_per_token'] * 3
"
# MLA from DeepSeek-V3's tensors: the latent norms are steps; decode compares the latent cache
# with the decompressed one, 4 heads · (8 + 4 + 8) numbers against d_c + d_r = 8 + 4, 8 bytes each.
expect_exit 0 "^c_kv_normed  C_KV,n = " -- "$T" run "$M/deepseek_v3/problem.json" --steps c_kv_normed --color never
expect_exit 0 "^c_q_normed  C_Q,n = " -- "$T" run "$M/deepseek_v3/problem.json" --steps c_q_normed --color never
expect_exit 0 "kv_cache_bytes_per_token = 96$" -- "$T" decode "$M/deepseek_v3/problem.json"
expect_exit 0 "kv_cache_bytes_per_token_without_mla = 640$" -- "$T" decode "$M/deepseek_v3/problem.json"
expect_exit 0 '"scale":0\.3742606' -- "$T" run "$M/deepseek_v3_yarn/problem.json" --format json --steps final
# cost --model: the KV cache layer by layer, worked by hand. gemma2: 2 KV heads of 8 → 32
# numbers a token per layer, 4 bytes; layer 0 slides (W = 3): 32·4·3 + 32·4·4096 = 524,672 bytes;
# its attention reads q (32×16), k, v (16×16 each) and o (16×32) per layer: 1,536, 3,072 in all.
cost=$("$T" cost --model "$M/gemma2" --n 4096 --format json)
for fact in '"kv_cache_numbers_per_token": 64' '"kv_cache_bytes_total": 524672' '"attention_parameters": 3072' '"kv_cache_tokens": 3' '"bytes": 4'; do
  expect_exit 0 "$fact" -- echo "$cost"
done
# deepseek_v3: the latent and the RoPE key, 8 + 4 = 12 numbers per layer; q_a (12×32), its norm (12),
# q_b (48×12), kv_a (12×32), its norm (8), kv_b (64×8), o (32×32) = 2,900 per layer.
cost=$("$T" cost --model "$M/deepseek_v3" --n 100 --format json)
for fact in '"kv_cache_numbers_per_token": 24' '"kv_cache_bytes_total": 9600' '"attention_parameters": 5800'; do
  expect_exit 0 "$fact" -- echo "$cost"
done
expect_exit 0 "4,096 tokens   524,672 bytes" -- "$T" cost --model "$M/gemma2" --n 4096
expect_exit 0 '"kv_cache_bytes_total": 1536' -- "$T" cost --model "$M/mistral_window" --n 10 --bytes 8 --format json  # every layer slides: 2 · 32 · 8 · 3
# On every model: the total is the sum of its layers.
for golden in "${goldens[@]}"; do
  "$T" cost --model "$M/$golden" --n 50 --format json > cost.json
  expect_exit 0 "" -- python3 -c "
import json
c = json.load(open('cost.json'))
assert c['kv_cache_bytes_total'] == sum(l['kv_cache_bytes_total'] for l in c['layers']), c
assert c['attention_parameters'] == sum(l['attention_parameters'] for l in c['layers'])
assert c['kv_cache_numbers_per_token'] == sum(l['kv_cache_numbers_per_token'] for l in c['layers'])
"
done
expect_exit 2 "attn-trace: error: --d-model excludes --model" -- "$T" cost --model "$M/gemma2" --n 10 --d-model 16
expect_exit 2 "config.json: cannot open the model.s config" -- "$T" cost --model "$M" --n 10
# decode under dynamic NTK turns each token with the base of the length so far, as transformers' cache
# does (problem_decode.json, checked above, is that): the full pass differs, and a note says why.
expect_exit 0 "dynamic RoPE: each step turns its query" -- "$T" decode "$M/llama_dynamic/problem.json" --steps final
expect_exit 0 "max_abs_diff_vs_full = 0\.0[1-9]" -- "$T" decode "$M/llama_dynamic/problem_decode.json" --steps final
# grad has no qk-norm backward yet: it says so.
expect_exit 2 "grad does not differentiate through qk-norm yet" -- "$T" grad "$M/qwen3_qknorm/problem.json"

finish
