# The rest of the family from the command line
# (docs/FAMILY.md#the-rest-of-the-attention-family): sparse patterns, MLA, dropout and the
# permutation experiment, with their bad input (exit 2).
source "$SOURCE_DIR/tests/cli/lib.sh"
T=$ATTN_TRACE
cd "$SOURCE_DIR"

# Sparse: the pattern drawn, reach and its numbers; --mask as JSON; tiled skips tiles.
expect_exit 0 "pattern \(█ scored, · not scored\)" -- "$T" run examples/sparse_longformer.json --steps mask
expect_exit 0 "reach_max = 2" -- "$T" run examples/sparse_longformer.json --steps reach
expect_exit 0 '"scored_pairs": ?66(\.0)?,"density"' -- "$T" run examples/sparse_bigbird.json --format json
expect_exit 0 "sparse\(window left 1, right 1; global \[0\]\)" -- "$T" run examples/damaged_on_arrival.json --mask '{"sparse": {"window": {"left": 1, "right": 1}, "global": [0]}}'
expect_exit 0 "tiles skipped" -- "$T" tiled examples/sparse_bigbird.json --block-q 2 --block-k 2 --steps out
expect_exit 0 "n 1,024 → 2,048 \(2×\): scored pairs 2.0" -- "$T" cost --n 1024,2048 --d-model 64 --heads 1 --sparse '{"window": {"left": 8, "right": 8}, "global": [0]}'
expect_exit 0 "MLA    d_c \+ d_r              576 numbers" -- "$T" cost --n 1 --d-model 16384 --heads 128 --mla 512,64
expect_exit 0 "MHA    2·H·d_h             32,768 numbers" -- "$T" cost --n 1 --d-model 16384 --heads 128 --mla 512,64
expect_exit 0 "\"mla\": 576" -- "$T" cost --n 1 --d-model 16384 --heads 128 --mla 512,64 --format json

# MLA: its steps, the absorbed form, decode's latent cache.
expect_exit 0 "max_abs_diff_absorbed = [0-9.e-]+" -- "$T" run examples/mla_small.json --steps c_kv,q_latent
expect_exit 0 "c_cache  C_cache = C_KV\[0…0\]  \(1, 4\)  t = 0" -- "$T" decode examples/mla_small.json --steps c_cache
expect_exit 0 "MLA cache: c_cache \(d_c = 4\) and kr_cache \(d_r = 2\)" -- "$T" decode examples/mla_small.json --steps out

# Dropout: train from the file, --eval switches it off, and other pipelines refuse train mode.
expect_exit 0 "dropped  A_d = A ⊙ B / \(1 − p\)" -- "$T" run examples/dropout_train.json --steps dropped
expect_exit 0 "is not applied: eval mode" -- "$T" run examples/dropout_train.json --eval --steps out
expect_exit 2 "dropout in train mode is traced by the full trace \(run\) only, not by tiled: switch it off with --eval" -- "$T" tiled examples/dropout_train.json
expect_exit 2 "--train .*: the problem has no dropout" -- "$T" run examples/damaged_on_arrival.json --train

# Permute: equivariance, what breaks it, --source invariance.
expect_exit 0 "max_abs_diff_equivariance = 0" -- "$T" permute examples/damaged_on_arrival.json --perm 2,0,1
expect_exit 0 "here a causal mask ties rows to their places" -- "$T" permute examples/damaged_on_arrival.json --perm 2,0,1 --mask causal
expect_exit 0 "max_abs_diff_invariance = [0-9.e-]+" -- "$T" permute examples/cross_attention.json --source --seed 3
expect_exit 0 '"permuted_out"' -- "$T" permute examples/damaged_on_arrival.json --seed 1 --format json
expect_exit 2 "--perm 2,0,0: index 0 appears twice" -- "$T" permute examples/damaged_on_arrival.json --perm 2,0,0
expect_exit 2 "--perm 2,0: the experiment permutes 3 rows, so it needs 3 indices, found 2" -- "$T" permute examples/damaged_on_arrival.json --perm 2,0
expect_exit 2 "--source permutes the source rows of cross-attention, and this problem is self-attention" -- "$T" permute examples/damaged_on_arrival.json --source
expect_exit 2 "" -- "$T" permute examples/damaged_on_arrival.json --perm 1,0,2 --seed 3

# Exercises of the new topics.
for topic in sparse mla dropout permutation; do
  expect_exit 0 "Answer" -- "$T" exercise --topic "$topic" --seed 2 --format text
done

# Every example line of the new commands' --help runs as printed (from the repository).
for command in run permute cost exercise; do
  while IFS= read -r line; do
    checks=$((checks + 1))
    (eval "${line/attn-trace/\"\$T\"}") > /dev/null 2>&1 || fail "$command --help example exits non-zero: $line"
  done < <("$T" "$command" --help | sed -n 's/^  \(attn-trace .*\)$/\1/p' | grep -v ' | \|&&\|big.json\| -o \| > ')
done

# Bad input names the key.
cd "$(mktemp -d)"
qkv='"Q": [[1, 0], [0, 1], [1, 1]], "K": [[1, 0], [0, 1], [1, 1]], "V": [[1], [2], [3]]'
expect_bad_input "{$qkv, \"sparse\": {\"block\": 0}}" '\$\.sparse\.block: a block holds at least 1 token, found 0'
expect_bad_input "{$qkv, \"sparse\": {\"window\": {\"left\": -1}}}" '\$\.sparse\.window\.left: a window reaches 0 or more blocks'
expect_bad_input "{$qkv, \"sparse\": {\"global\": [3]}}" '\$\.sparse\.global\[0\]: .*found 3'
expect_bad_input "{$qkv, \"sparse\": {\"random\": {\"per_row\": -1}}}" '\$\.sparse\.random\.per_row: expected 0 or more'
expect_bad_input "{$qkv, \"mask\": {\"sparse\": {\"blok\": 2}}}" '\$\.mask\.sparse\.blok: unknown key "blok" \(did you mean "block"\?\)'
expect_bad_input "{$qkv, \"sparse\": {\"window\": 1}, \"mask\": [{\"allowed\": [[true]]}]}" '\$\.mask\[0\]: the scores are \(3, 3\)'
expect_bad_input '{"Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1], [1, 1]], "V": [[1], [2], [3]], "sparse": {"block": 2, "window": 1}}' '\$\.sparse\.block: .*only when the block divides m − n = 1, found block 2'
expect_exit 2 "--perm 1,0,2,: .*a comma at the end" -- "$T" permute "$SOURCE_DIR/examples/damaged_on_arrival.json" --perm 1,0,2,
expect_bad_input "{$qkv, \"dropout\": {\"p\": 1}}" '\$\.dropout\.p: expected 0 ≤ p < 1'
expect_bad_input "{$qkv, \"dropout\": {\"p\": 0.1, \"mode\": \"training\"}}" '\$\.dropout\.mode: expected "train" or "eval"'
x='"X": [[1, 0], [0, 1]], "W_Q": [[1, 0], [0, 1]]'
expect_bad_input "{$x, \"mla\": {\"W_DKV\": [[1], [0]], \"W_UK\": [[1, 0], [0, 1]], \"W_UV\": [[1, 0]]}}" '\$\.mla\.W_UK: W_DKV is \(2, 1\) and W_UK is \(2, 2\)'
expect_bad_input "{$x, \"mla\": {\"W_DKV\": [[1], [0]], \"W_UK\": [[1, 0]], \"W_UV\": [[1, 0]], \"rope_dims\": 1}}" '\$\.mla\.rope_dims: .*must be even, found 1'
expect_bad_input "{$x, \"mla\": {\"W_DKV\": [[1], [0]], \"W_UK\": [[1, 0]], \"W_UV\": [[1, 0]], \"rope_dims\": 2, \"W_QR\": [[1, 0], [0, 1]]}}" 'W_KR is missing'
expect_bad_input "{$qkv, \"mla\": {\"W_DKV\": [[1]]}}" '\$\.mla: MLA projects token vectors: it needs X'
expect_exit 2 "--mla 512,x: expected D_C or D_C,D_R" -- "$T" cost --n 1 --d-model 8 --heads 1 --mla 512,x
expect_exit 2 "--sparse: .*\\\$\.sparse\.window" -- "$T" cost --n 64 --d-model 8 --sparse '{"window": -2}'
expect_exit 2 "several --n values go with --sparse" -- "$T" cost --n 64,128 --d-model 8
finish
