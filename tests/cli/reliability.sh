# Issue 12: budgets before allocation, overflow reported, no abort on malformed input.
source "$SOURCE_DIR/tests/cli/lib.sh"
A=$ATTN_TRACE
E=$SOURCE_DIR/examples/damaged_on_arrival.json

# tiled at n = 600 with 2 × 2 tiles prints 450 000 steps (67 MB of text): refused
# under a smaller --max-output with the figures, printed under a larger one
"$A" random --n 600 --dk 4 -o r600.json >/dev/null
expect_exit 2 "r600.json: the tiled output would be about [0-9]+ MiB \(450001 steps and [0-9]+ numbers in text\); the limit is 16 MiB \(--max-output\): choose what to print with --steps, --head or --batch" -- "$A" tiled r600.json --max-output 16M
expect_exit 2 "the tiled output would be about [0-9]+ MiB .* numbers in json\)" -- "$A" tiled r600.json --format json --max-output 16M
expect_exit 2 "r600.json: writing the tiled output .* would hold about 1.[0-9] GiB beside the trace's [0-9]+ MiB; the limit is 1.0 GiB \(--max-memory\).*or --format text" -- "$A" tiled r600.json --format json --max-memory 1G
expect_exit 0 "^out  O = u / ℓ after the last tile of each query block  \(600, 4\)" -- "$A" tiled r600.json --max-output 16M --steps out
# the trace itself past --max-memory: refused before it is computed
expect_exit 2 "r600.json: the tiled trace of n = 600 queries × m = 600 keys × 1 head would hold about [0-9]+ MiB; the limit is 64 MiB \(--max-memory\)" -- "$A" tiled r600.json --max-memory 64M
expect_exit 2 "r600.json: the decode trace .* the limit is 1 MiB \(--max-memory\)" -- "$A" decode r600.json --max-memory 1M
expect_exit 2 "r600.json: explaining 'weights\[0,1\]' would hold about .*; the limit is 1 KiB \(--max-memory\)" -- "$A" explain r600.json --cell 'weights[0,1]' --max-memory 1K
expect_exit 2 "ERROR r600.json" -- "$A" check r600.json --max-memory 1M
expect_exit 2 "r600.json: the check trace .* the limit is 1 MiB \(--max-memory\)" -- "$A" check r600.json --max-memory 1M
# run takes the fast path past --max-memory, and says why
expect_exit 0 "note: .*over the 1 MiB budget \(--max-memory\)" -- "$A" run r600.json --max-memory 1M --steps out
expect_exit 2 "--max-memory: x unit not recognized" -- "$A" run "$E" --max-memory 10X

# a random matrix is made only after its shape fits the problem: at once, not after 2 GiB
printf '%s' '{"Q": [[1]], "K": [[1]], "V": {"random": {"shape": [16384, 16384]}}}' > big_v.json
start=$(date +%s%N)
expect_exit 2 "big_v.json: \\\$.V: K has 1 row \(keys\) so V needs 1 row, found 16384" -- "$A" run big_v.json
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
expect_exit 0 "" -- test "$elapsed_ms" -lt 2000

# overflow: an error naming the step and the cell; a note with --allow-nonfinite
printf '%s' '{"Q": [[1e308]], "K": [[1e308]], "V": [[1]]}' > overflow.json
expect_exit 2 "overflow.json: overflow: scores \(head 0\)\[0, 0\] is inf although every input is finite" -- "$A" run overflow.json
expect_exit 2 "overflow: masked \(head 0, tile \[0, 0\]\)\[0, 0\] is inf" -- "$A" tiled overflow.json
expect_exit 2 "overflow: row_max \(head 0\)\[0, 0\] is inf" -- "$A" run overflow.json --fast
expect_exit 0 "note: allow_nonfinite: overflow: scores \(head 0\)\[0, 0\] is inf" -- "$A" run overflow.json --allow-nonfinite
expect_exit 2 "overflow: scaled \(head 0\)\[0, 2\] is inf" -- "$A" run "$E" --scale 1e308
# An input the dtype cannot hold is named as the input, not as a computation's overflow.
expect_exit 2 "overflow: Q\[0, 0\] = 1e\+39 is a finite input but past f32's range \(±3.4e\+38\): the type cannot hold it" -- sh -c "echo '{\"Q\": [[1e39]], \"K\": [[1]], \"V\": [[1]]}' | \"$A\" run - --dtype f32"
expect_exit 2 "overflow: W_V\[0, 1\] = -1e\+39 is a finite input but past f32's range" -- sh -c "echo '{\"X\": [[1, 0]], \"W_Q\": [[1], [0]], \"W_K\": [[1], [0]], \"W_V\": [[1, -1e39], [3, 4]]}' | \"$A\" run - --dtype f32"
expect_exit 0 "note: f16 \(traced as the type stores it\): overflow: Q\[0, 0\] is a finite input but past f16's range" -- sh -c "echo '{\"Q\": [[70000]], \"K\": [[1]], \"V\": [[1]]}' | \"$A\" run - --dtype f16"
# ... in its sequence of a batch, in MLA's weights and grad's d_out; f32's own largest number is no overflow.
expect_exit 2 "overflow: X \(batch 1\)\[0, 1\] = 1e\+39 is a finite input" -- sh -c "echo '{\"X\": [[[1, 0]], [[2, 1e39]]], \"W_Q\": [[1], [0]], \"W_K\": [[1], [0]], \"W_V\": [[1], [0]]}' | \"$A\" run - --dtype f32"
expect_exit 2 "overflow: d_out\[0, 0\] = 1e\+39 is a finite input" -- sh -c "echo '{\"Q\": [[1]], \"K\": [[1]], \"V\": [[1]], \"d_out\": [[1e39]]}' | \"$A\" grad - --dtype f32"
python3 -c "import json, sys; d = json.load(open(sys.argv[1])); d['mla']['W_DKV'][0][0] = 1e39; json.dump(d, open('mla_big.json', 'w'))" "$SOURCE_DIR/examples/mla_small.json"
expect_exit 2 "overflow: mla\.W_DKV\[0, 0\] = 1e\+39 is a finite input" -- "$A" run mla_big.json --dtype f32
expect_exit 2 "overflow: scores \(head 0\)\[0, 0\] is inf although every input is finite" -- sh -c "echo '{\"Q\": [[3.4028235e38]], \"K\": [[2]], \"V\": [[1]]}' | \"$A\" run - --dtype f32"

# malformed input never aborts: a number past double's range, a deep nesting
printf '1e400' > huge.json
expect_exit 2 "huge.json: .*line 1, column" -- "$A" run huge.json

finish
