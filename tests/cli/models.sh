# Real models' weights (docs/PROBLEM.md#real-model-weights-npy-safetensors-checkpoint):
# the tiny GPT-2, Llama and BERT goldens of tools/make_model_goldens.py checked from their
# safetensors, and corrupted copies of each file kind refused with exit 2 and a message
# naming the file (and tensor).
source "$SOURCE_DIR/tests/cli/lib.sh"
T=$ATTN_TRACE
M=$SOURCE_DIR/tests/models

for family in gpt2 llama bert torch_mha; do
  expect_exit 0 "^PASS .*$family/problem.json \(run " -- "$T" check "$M/$family/problem.json"
done
# The README quotes the largest difference check reports for each model, as measured on
# one machine; another CPU's BLAS may round differently, so the test holds check to ten
# times the quoted figure and the README to the figures.
for quoted in "gpt2 3.6e-15 GPT-2" "llama 5.6e-17 Llama" "torch_mha 2.2e-15 nn.MultiheadAttention\`" "bert 1e-7 float32 model"; do
  read -r family figure words <<<"$quoted"
  bound=$(python3 -c "print(10 * $figure)")
  expect_exit 0 "^PASS " -- "$T" check "$M/$family/problem.json" --atol "$bound" --rtol 0
  expect_exit 0 "" -- grep -q "${words} ${figure}" "$SOURCE_DIR/README.md"
done
expect_exit 0 "^4 passed, 0 failed$" -- "$T" check "$M"/{gpt2,llama,bert,torch_mha}/problem.json --dtype f32 --atol 1e-5
# token labels from the problem file, the layer's weights per head
expect_exit 0 "^mat +0\.[0-9]+ " -- "$T" run "$M/gpt2/problem.json" --steps weights --head 1

copy() { rm -rf m && cp -r "$M/$1" m; }
# A missing tensor names the nearest ones the file has.
copy gpt2; sed -i 's/"layer": 1/"layer": 5/' m/problem.json
expect_exit 2 "\\\$\.checkpoint: gpt2 family, layer 5: .*m/model.safetensors: no tensor 'transformer\.h\.5\.attn\.c_attn\.weight' \(28 tensors; the nearest: 'transformer\.h\.0\.attn\.c_attn\.weight'" -- "$T" check m/problem.json
copy llama; sed -i 's/"family": "llama"/"family": "llamma"/' m/problem.json
expect_exit 2 'unknown family "llamma": expected gpt2, llama, bert or torch-mha' -- "$T" check m/problem.json
copy bert; sed -i 's/"heads": 2,//' m/problem.json
expect_exit 2 'needs "heads" at the top level' -- "$T" check m/problem.json
# safetensors: the header length past the end, a header that is not JSON, a truncated file
copy gpt2; printf '\xff\xff\xff\x00\x00\x00\x00\x00' | dd of=m/model.safetensors bs=1 conv=notrunc 2>/dev/null
expect_exit 2 "m/model.safetensors: not a valid safetensors file: the header length 16777215 runs past the end of the file" -- "$T" check m/problem.json
copy gpt2; printf '#' | dd of=m/model.safetensors bs=1 seek=8 conv=notrunc 2>/dev/null
expect_exit 2 "m/model.safetensors: not a valid safetensors file: its header is not JSON" -- "$T" check m/problem.json
copy llama; head -c 30000 "$M/llama/model.safetensors" > m/model.safetensors
expect_exit 2 "m/model.safetensors: not a valid safetensors file: tensor '.*': data_offsets \[[0-9]+, [0-9]+\] lie outside the file's" -- "$T" check m/problem.json
rm -rf m; mkdir m; cp "$M/bert/problem.json" m/
expect_exit 2 "\\\$\.checkpoint\.safetensors: .*m/model.safetensors: cannot open the safetensors file" -- "$T" check m/problem.json
# .npy: a bad magic, a shape that does not match the data, a missing file, the wrong width
copy bert; printf 'X' | dd of=m/hidden.npy bs=1 conv=notrunc 2>/dev/null
expect_exit 2 "\\\$\.X: .*m/hidden.npy: not a valid .npy file: it does not start with the magic" -- "$T" check m/problem.json
copy bert; head -c 400 "$M/bert/hidden.npy" > m/hidden.npy
expect_exit 2 "m/hidden.npy: not a valid .npy file: the shape \(6, 16\) needs 384 bytes of data, the file has 272" -- "$T" check m/problem.json
copy bert; rm m/hidden.npy
expect_exit 2 "\\\$\.X: .*m/hidden.npy: cannot open the .npy file" -- "$T" check m/problem.json
# hidden states of the wrong width for the checkpoint's projections (X (3, 4), W_Q (16, 16))
printf '%s' "{\"X\": {\"npy\": \"$SOURCE_DIR/tests/arrays/f8_c.npy\"}, \"heads\": 2,
  \"checkpoint\": {\"safetensors\": \"$M/bert/model.safetensors\", \"family\": \"bert\", \"layer\": 1}}" > wide.json
expect_exit 2 "wide.json: \\\$\.W_Q \(tensor 'encoder\.layer\.1\.attention\.self\.query\.weight' of .*model\.safetensors\): X is \(3, 4\) so W_Q needs 4 rows, found 16" -- "$T" run wide.json
# An .npy cut short is named as such (file and missing bytes) before its shape meets the
# problem's: the header of f8_c.npy promises (3, 4), the copy holds 40 of its 96 bytes.
head -c $(( $(stat -c %s "$SOURCE_DIR/tests/arrays/f8_c.npy") - 56 )) "$SOURCE_DIR/tests/arrays/f8_c.npy" > short.npy
printf '%s' '{"X": [[1, 0, 0], [0, 1, 0]], "W_Q": {"npy": "short.npy"}, "W_K": {"npy": "short.npy"}, "W_V": {"npy": "short.npy"}}' > short.json
expect_exit 2 "short.npy: not a valid .npy file: the shape \(3, 4\) needs 96 bytes of data, the file has 40 \(the file is cut short\)" -- "$T" run short.json
finish
