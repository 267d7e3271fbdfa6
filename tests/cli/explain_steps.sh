# explain, version 2: every step of run, decode's steps with --t, the tiled
# pass's with --tile, computed on the rows they need; every error is exit 2.
source "$SOURCE_DIR/tests/cli/lib.sh"
A=$ATTN_TRACE
E=$SOURCE_DIR/examples/damaged_on_arrival.json
X=$SOURCE_DIR/examples/damaged_on_arrival_4x.json
R=$SOURCE_DIR/tests/golden/rope_half.json
M=$SOURCE_DIR/tests/golden/mha_causal.json
L=$SOURCE_DIR/tests/golden/alibi.json

# run's steps, cell by cell
expect_exit 0 "k_21 = 0 × 0 \+ 0 × 0.5 \+ 4 × 2 \+ 0 × 0 = 0 \+ 0 \+ 8 \+ 0 = 8" -- "$A" explain "$X" --cell 'k[2,1]'
expect_exit 0 "q \(Q, K, V are given\) is an input" -- "$A" explain "$SOURCE_DIR/examples/gqa_8q_2kv.json" --cell 'q[0,1]'
expect_exit 0 "half pairs: column 1 is paired with column 3" -- "$A" explain "$R" --cell 'q_rot[1,1]'
expect_exit 0 "query 0 reads keys j <= 0, so key 2 is hidden" -- "$A" explain "$E" --cell 'mask[0,2]' --mask causal
expect_exit 0 "bottom-right aligned" -- "$A" explain "$E" --cell 'mask[0,2]' --mask causal-bottom-right
expect_exit 0 "ALiBi: head 1's slope" -- "$A" explain "$L" --cell 'mask[3,0]' --head 1
expect_exit 0 "m_0 = 2.1213" -- "$A" explain "$E" --cell 'row_max[0,0]'
expect_exit 0 "e\^\(0\) = 1" -- "$A" explain "$E" --cell 'exp[0,2]'
expect_exit 0 "ℓ_0 = 0.1707 \+ 0.2037 \+ 1 = 1.3744" -- "$A" explain "$E" --cell 'row_sum[0,0]'
expect_exit 0 "o_01 = Σ_j A_0j v_j1 = " -- "$A" explain "$E" --cell 'out[0,1]'
expect_exit 0 "is head 1's output column 1" -- "$A" explain "$M" --cell 'concat[0,5]'
expect_exit 0 "then the bias b_O\[0\]" -- "$A" explain "$M" --cell 'final[1,0]'
# decode at t, tiled at a tile
expect_exit 0 "the softmax over the 3 cached keys" -- "$A" explain "$E" --cell 'weights[0,1]' --t 2
expect_exit 0 "row 1 is k_1 of KV head 0, appended at step 1" -- "$A" explain "$E" --cell 'k_cache[1,0]' --t 2
expect_exit 0 "z_12 = 0 \+ \(-inf\) = -inf" -- "$A" explain "$E" --cell 'masked[1,2]' --t 2 --prefill 3
expect_exit 0 "m_old = 0.5303" -- "$A" explain "$E" --cell 'u[0,1]' --tile 0,1
expect_exit 0 "ℓ_new = 1 × 1.4931 \+ 0.4931 = 1.9861" -- "$A" explain "$E" --cell 'l[0,0]' --tile 1,1
expect_exit 0 "--tile QB,KT" -- "$A" explain --help
# errors: exit 2, saying what exists
expect_exit 2 "has no step 'q_rot' \(the problem has no rope\); this problem's run trace has: x, q, k, v, scores" -- "$A" explain "$E" --cell 'q_rot[0,0]'
expect_exit 2 "no W_O" -- "$A" explain "$E" --cell 'final[0,0]'
expect_exit 2 "--t 3: decode's steps are t = 0 to 2" -- "$A" explain "$E" --cell 'weights[0,0]' --t 3
expect_exit 2 "the prefill block of 2 queries is the step t = 1" -- "$A" explain "$E" --cell 'weights[0,0]' --t 0 --prefill 2
expect_exit 2 "decode steps have no 'm'" -- "$A" explain "$E" --cell 'm[0,0]' --t 1
expect_exit 2 "the tile was skipped" -- "$A" explain "$E" --cell 'l[0,0]' --tile 0,1 --mask causal
expect_exit 2 "the tiles are \[0…1, 0…1\]" -- "$A" explain "$E" --cell 'l[0,0]' --tile 2,0
expect_exit 2 "expected QB,KT" -- "$A" explain "$E" --cell 'l[0,0]' --tile 2
expect_exit 2 "excludes" -- "$A" explain "$E" --cell 'l[0,0]' --tile 0,0 --t 1
expect_exit 2 "--block-q 0" -- "$A" explain "$E" --cell 'l[0,0]' --tile 0,0 --block-q 0
# a long sequence: one row of it, refused only where a target would not fit
"$A" random --n 65536 --dk 2 -o long.json
expect_exit 0 "scores\[65535,7\]" -- "$A" explain long.json --cell 'scores[65535,7]'
expect_exit 2 "would hold about 64.0 GiB .*choose a smaller --block-q and --block-k" -- "$A" explain long.json --cell 'l[0,0]' --tile 0,0 --block-q 65536 --block-k 65536
finish
