# decode, tiled and cost from the command line: help with examples, the text
# and JSON forms, the seeds' figures, check's options, and bad options (exit 2).
source "$SOURCE_DIR/tests/cli/lib.sh"
T=$ATTN_TRACE
E="$SOURCE_DIR/examples"

expect_exit 0 "Examples:" -- "$T" decode --help
expect_exit 0 "Examples:" -- "$T" tiled --help
expect_exit 0 "Examples:" -- "$T" cost --help

# decode: one line per step with the cache length, the weights and the output row.
expect_exit 0 "t = 2 \(arrival\)  cache 3  weights \[0\.5035 0\.2483 0\.2483\]  out \[1\.0070 0\.2483\]" -- "$T" decode "$E/damaged_on_arrival.json"
expect_exit 0 "max_abs_diff_vs_full = 0" -- "$T" decode "$E/damaged_on_arrival.json" --prefill 2
expect_exit 0 '"name":"k_cache","head":0,"t":2,"symbol":"K_cache","formula":"[^"]*","shape":\[3,2\]' -- "$T" decode "$E/damaged_on_arrival.json" --format json
expect_exit 0 '"max_abs_diff_vs_full":0' -- "$T" decode "$E/damaged_on_arrival.json" --format json
expect_exit 0 "k_cache  K_cache = .*\(2, 2\)  KV head 1  t = 1" -- "$T" decode "$E/gqa_8q_2kv.json" --steps k_cache
# The textbook cache: 32 layers, 8 KV heads, d = 128, fp16, 8192 tokens → 1 GiB.
expect_exit 0 "1,073,741,824 bytes .*1\.00 GiB" -- "$T" cost --n 8192 --d-model 4096 --heads 32 --kv-heads 8 --layers 32 --bytes 2

# tiled: the tile steps carry tile, causal tiles above the diagonal are skipped.
expect_exit 0 '"tile":\[0,1\]' -- "$T" tiled "$E/damaged_on_arrival.json" --format json
expect_exit 0 "tiles_skipped = 1" -- "$T" tiled "$E/damaged_on_arrival.json" --mask causal
expect_exit 0 "tiles_skipped = 3" -- "$T" tiled "$E/damaged_on_arrival.json" --mask causal --block-q 1 --block-k 1
expect_exit 0 "scores_held = 6" -- "$T" tiled "$E/damaged_on_arrival.json" --block-q 3 --block-k 2
expect_exit 0 "rescale  .*tile \[0, 1\]" -- "$T" tiled "$E/damaged_on_arrival.json" --steps rescale
# issue 11, finding 7: skipped tiles one line each, the first tile's rescale written
# as the 0 it shows, and a tile notation with a legend that is not GQA's K_0
expect_exit 0 "note: tile \[0, 1\]: skipped, every score masked \(queries 0…1, keys 2…2\)" -- "$T" tiled "$E/damaged_on_arrival.json" --mask causal
expect_exit 0 "note: tile \[0, 1\], head 1: skipped, every score masked \(queries 0…1, keys 2…3\)" -- "$T" tiled "$E/gqa_8q_2kv.json" --mask causal
expect_exit 0 "^rescale  α = exp\(m_old − m\) = 0 \(the block's first tile: m_old = −∞.*tile \[0, 0\]" -- "$T" tiled "$E/damaged_on_arrival.json" --steps rescale
expect_exit 0 "^masked  Z = s · Q\[0…1\] K\[2…2\]ᵀ \+ M \(query block 0, key tile 1\)" -- "$T" tiled "$E/damaged_on_arrival.json" --steps masked
expect_exit 0 "note: tile \[qb, kt\] = query block qb × key tile kt" -- "$T" tiled "$E/damaged_on_arrival.json"
expect_exit 0 "Q\[0…1\] K_1\[0…1\]ᵀ" -- "$T" tiled "$E/gqa_8q_2kv.json" --head 5 --steps masked
# One notation (docs/NOTATION.md): decode and tiled call s · Q Kᵀ + M `masked`, as run
# does, and have no `scores` step: asking for it names the new name, exit 2.
expect_exit 0 "^masked  Z = s · Q\[2\] K_cacheᵀ \+ M  \(1, 3\)  head 0  t = 2" -- "$T" decode "$E/damaged_on_arrival.json" --steps masked
expect_exit 0 "^masked  Z = s · Q\[0…1\] K_cacheᵀ \+ causal M  \(2, 2\)  head 0  t = 1" -- "$T" decode "$E/damaged_on_arrival.json" --steps masked --prefill 2
expect_exit 2 "--steps scores: this decode trace has no 'scores' step \(decode calls s · Q Kᵀ \+ M 'masked', as run does: use --steps masked\)" -- "$T" decode "$E/damaged_on_arrival.json" --steps scores
expect_exit 2 "--steps scores: this tiled trace has no 'scores' step \(tiled calls s · Q Kᵀ \+ M 'masked', as run does: use --steps masked\)" -- "$T" tiled "$E/damaged_on_arrival.json" --steps scores
expect_exit 2 "decode calls s · Q Kᵀ \+ M 'masked', as run does: explain 'masked\[0,1\]'" -- "$T" explain "$E/damaged_on_arrival.json" --cell 'scores[0,1]' --t 2
expect_exit 2 "tiled calls s · Q Kᵀ \+ M 'masked', as run does: explain 'masked\[0,1\]'" -- "$T" explain "$E/damaged_on_arrival.json" --cell 'scores[0,1]' --tile 1,0
# grad --tiled states its own tiles (not the forward's fast path), counted in scores.
expect_exit 0 "note: tiled: Br = 2 query rows × Bc = 2 keys per tile, Tr × Tc = 2 × 2 tiles per head; 0 of 4 tiles skipped \(every score masked\); 4 scores held at once instead of n · m = 9" -- "$T" grad "$E/damaged_on_arrival.json" --tiled
expect_exit 0 "note: tiled: Br = 3 query rows × Bc = 1 keys per tile, Tr × Tc = 1 × 3 tiles per head" -- "$T" grad "$E/damaged_on_arrival.json" --tiled --block-q 5 --block-k 1
expect_exit 0 "… and 16 more skipped tiles" -- "$T" tiled "$E/gqa_8q_2kv.json" --mask causal --block-q 1 --block-k 1

# check runs decode and tiled files, with block sizes after the file names.
expect_exit 0 "^1 passed, 0 failed$" -- "$T" check "$E/damaged_on_arrival_decode.json"
expect_exit 0 "^1 passed, 0 failed$" -- "$T" check "$E/damaged_on_arrival_tiled.json" --block-q 2 --block-k 2
# Those two files name decode's and tiled's masked step `scores`, as versions before the
# rename wrote it: check reads it as `masked` and says so (docs/NOTATION.md#one-name-per-quantity).
expect_exit 0 "^note: 1 expect entry named 'scores' with a t or a tile read as 'masked'" -- "$T" check "$E/damaged_on_arrival_decode.json"
expect_exit 0 "^note: 2 expect entries named 'scores' with a t or a tile read as 'masked'" -- "$T" check "$E/damaged_on_arrival_tiled.json"
expect_exit 1 "no such step" -- "$T" check "$E/damaged_on_arrival_tiled.json" --block-k 3

# cost: the seeds' figures.
# At N = 2d the two terms are equal: neither dominates (4·N·d² = 2·N²·d).
expect_exit 0 "overtakes when N > 2·d = 1,024: here the two are equal" -- "$T" cost --n 1024 --d-model 512
expect_exit 0 "here the projections dominate" -- "$T" cost --n 1023 --d-model 512
expect_exit 0 "here attention dominates" -- "$T" cost --n 1025 --d-model 512
expect_exit 0 "with biases +4d² \+ 4d = 16,640" -- "$T" cost --n 30 --d-model 64 --heads 4
expect_exit 0 "4d² \+ 4d = 1,050,624" -- "$T" cost --n 30 --d-model 512 --heads 8
expect_exit 0 "per head .*0\.07 MB" -- "$T" cost --n 128 --d-model 64 --heads 1
expect_exit 0 "per head .*4\.19 MB" -- "$T" cost --n 1024 --d-model 64 --heads 1
expect_exit 0 "per head .*268\.44 MB" -- "$T" cost --n 8192 --d-model 64 --heads 1
expect_exit 0 "57,600 scores .*230\.4 kB" -- "$T" cost --n 120 --d-model 64 --heads 4
expect_exit 0 "N > 2·d = 8,192" -- "$T" cost --n 1000 --d-model 4096 --heads 32
expect_exit 0 '"crossover_length": 8192' -- "$T" cost --n 1000 --d-model 4096 --heads 32 --format json
expect_exit 0 '"parameters_with_biases": 16640' -- "$T" cost --n 120 --d-model 64 --heads 4 --format json

# Bad options: exit 2 with a message naming the option and what it needs.
expect_exit 2 "error: --block-q 0: expected a whole number of at least 1" -- "$T" tiled "$E/damaged_on_arrival.json" --block-q 0
expect_exit 2 "error: --block-k 0: " -- "$T" tiled "$E/damaged_on_arrival.json" --block-k 0
expect_exit 2 "error: --block-k -3: " -- "$T" tiled "$E/damaged_on_arrival.json" --block-k -3
expect_exit 2 "error: --block-q 0: " -- "$T" check "$E/damaged_on_arrival_tiled.json" --block-q 0
expect_exit 2 "error: --prefill 4: .*n = 3 queries" -- "$T" decode "$E/damaged_on_arrival.json" --prefill 4
expect_exit 2 "error: --prefill -1: " -- "$T" decode "$E/damaged_on_arrival.json" --prefill -1
expect_exit 2 "error: --layers 0: " -- "$T" decode "$E/damaged_on_arrival.json" --layers 0
expect_exit 2 "error: --bytes -2: " -- "$T" decode "$E/damaged_on_arrival.json" --bytes -2
expect_exit 2 "decode needs at least as many keys as queries" -- bash -c "echo '{\"Q\": [[1, 0], [0, 1]], \"K\": [[1, 0]], \"V\": [[1, 2]]}' | \"$T\" decode -"
expect_exit 2 "error: --n -5: " -- "$T" cost --n -5 --d-model 64
expect_exit 2 "error: --heads 3 must divide --d-model 64" -- "$T" cost --n 5 --d-model 64 --heads 3
expect_exit 2 "error: --kv-heads 3 must divide --heads 4" -- "$T" cost --n 5 --d-model 64 --heads 4 --kv-heads 3
expect_exit 2 "error: --bytes 0: " -- "$T" cost --n 5 --d-model 64 --bytes 0
expect_exit 2 "d-model" -- "$T" cost --n 5
expect_exit 2 "error: --d-model 0: expected a whole number of at least 1" -- "$T" cost --n 5 --d-model 0
# Every byte count stays finite, with a model too (whose --bytes replaces the checkpoint's).
expect_exit 2 "error: --bytes 1e\+308: expected the bytes per number, greater than 0 and at most 64" -- "$T" cost --n 5 --d-model 64 --bytes 1e308
for b in -2 0 nan inf; do
  expect_exit 2 "error: --bytes $b: expected the bytes per number" -- "$T" cost --model "$SOURCE_DIR/tests/models/gemma2" --n 10 --bytes "$b"
done
expect_exit 2 "error: --sparse: the pattern scores no pair at n = 1024" -- "$T" cost --n 1024,2048 --d-model 64 --sparse '{}'
# --sparse and --mla refuse the options they have no use for, rather than ignore them.
expect_exit 2 "error: --tokens sizes the KV cache's total, which --mla \(per token\) does not print" -- "$T" cost --n 1024 --d-model 64 --heads 4 --mla 16,4 --tokens 8192
expect_exit 2 "error: --tokens sizes the KV cache's total, which --sparse does not print" -- "$T" cost --n 1024 --d-model 64 --sparse '{"block": 64}' --tokens 8
expect_exit 2 "error: --sparse counts the scores of one layer: leave out --layers" -- "$T" cost --n 1024 --d-model 64 --sparse '{"block": 64}' --layers 32
expect_exit 0 "; 32 layers, 4 bytes per number" -- "$T" cost --n 1024 --d-model 64 --heads 4 --mla 16,4 --layers 32
# Their --help says what --heatmap draws: the whole weights only, not scores or masked.
for command in decode tiled; do
  expect_exit 0 "^  --heatmap +draw the whole weights \(put together from the $command steps\)" -- "$T" $command --help
done
finish
