# Issue 11: outputs that were silently empty or wrong with exit 0, and non-finite
# inputs (docs/COMMANDS.md#options-shared-by-run-decode-and-tiled,
# docs/PROBLEM.md#non-finite-inputs-allow_nonfinite). Each line failed on the main of 2026-11-30.
source "$SOURCE_DIR/tests/cli/lib.sh"
A=$ATTN_TRACE
E=$SOURCE_DIR/examples/damaged_on_arrival.json
G=$SOURCE_DIR/examples/gqa_8q_2kv.json

# --steps naming a step the trace does not produce: exit 2 with the steps it has
expect_exit 2 "no 'k_cache' step; it has: x, q, k, v, scores" -- "$A" run "$E" --steps k_cache
expect_exit 2 "no 'concat' step .*; it has: .*weights, out$" -- "$A" run "$E" --steps concat
expect_exit 2 "query head 5 reads KV head 1, so use --head 1" -- "$A" decode "$G" --head 5 --steps k_cache
expect_exit 0 "k_cache" -- "$A" decode "$G" --head 1 --steps k_cache
expect_exit 2 "no 'q_rot' step" -- "$A" tiled "$E" --steps q_rot
expect_exit 2 "no 'weights' step \(run took the fast path.*it has: row_max, row_sum, out" -- "$A" run "$E" --fast --steps weights

# --heatmap and --svg draw the step --steps names; weights by default
expect_exit 0 "^scores  head 0  \(3, 3\).*colour scale 0 … 3" -- "$A" run "$E" --heatmap --steps scores --color never
expect_exit 0 "^weights  head 0" -- "$A" run "$E" --heatmap --color never
expect_exit 2 "--heatmap draws one per-head step .*found --steps out" -- "$A" run "$E" --heatmap --steps out
"$A" run "$E" --svg masked.svg --steps masked --mask causal >/dev/null
expect_exit 0 "" -- grep -q 'class="title">masked</text>' masked.svg
# at n = 40 the column labels would overlap: only every k-th is written
"$A" random --n 40 --dk 4 -o r40.json >/dev/null
"$A" run r40.json --svg r40.svg >/dev/null
labels=$(grep -c 'class="key"' r40.svg)
expect_exit 0 "" -- test "$labels" -lt 40

# --pitfall on the fast path: exit 2 saying why, not the explanation alone
expect_exit 2 "--pitfall zero-scores compares the full \(n, m\) steps.*fast path \(--fast\)" -- "$A" run "$E" --fast --pitfall zero-scores --mask causal

# non-finite inputs: an error naming the first cell, unless allowed
printf '%s' '{"Q": [[1, "nan"], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[1], [2]]}' > nan.json
expect_exit 2 "nan.json: \\\$.Q\[0\]\[1\]: nan in an input.*--allow-nonfinite" -- "$A" run nan.json
expect_exit 0 "note: allow_nonfinite: .*\\\$.Q\[0\]\[1\] is nan" -- "$A" run nan.json --allow-nonfinite
expect_exit 0 "^0 +nan +nan$" -- "$A" run nan.json --allow-nonfinite --steps weights
printf '%s' '{"Q": [[1, 0]], "K": [[1, 0], ["inf", 1]], "V": [[1], [2]]}' > inf.json
expect_exit 2 "\\\$.K\[1\]\[0\]: inf in an input" -- "$A" run inf.json
expect_exit 2 "\\\$.K\[1\]\[0\]: inf in an input" -- "$A" check inf.json
expect_exit 2 "nothing to check" -- "$A" check inf.json --allow-nonfinite
# grad's d_out is an input, and the parameters of a step are screened as the inputs are
good='"Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[1, 2], [3, 4]]'
printf '%s' "{$good, \"d_out\": [[\"nan\", 1], [1, 1]]}" > d_out_nan.json
for way in "" --tiled --fast; do
  expect_exit 2 "d_out_nan.json: \\\$.d_out\[0\]\[0\]: nan in an input" -- "$A" grad d_out_nan.json $way
done
for parameter in '"alibi": ["nan"]|\$.alibi\[0\]' '"rope": {"angles_deg": [0, "inf"]}|\$.rope.angles_deg\[1\]' \
                 '"positions": [0, "-inf"]|\$.positions\[1\]' '"qk_norm": {"q_weight": ["nan", 1], "k_weight": [1, 1]}|\$.qk_norm.q_weight\[0\]'; do
  printf '%s' "{$good, ${parameter%%|*}}" > parameter.json
  expect_exit 2 "parameter.json: ${parameter#*|}: [-a-z]+ in an input" -- "$A" run parameter.json
done
# A gradient past the type's range is an overflow, as a forward step's is: exit 2, not inf printed.
printf '%s' '{"Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[1e200, 2], [3, 4]], "d_out": [[1e200, 1], [1, 1]]}' > grad_overflow.json
expect_exit 2 "overflow: grad_weights \(head 0\)\[0, 0\] is inf" -- "$A" grad grad_overflow.json
expect_exit 0 "note: .*grad_weights" -- "$A" grad grad_overflow.json --allow-nonfinite --steps grad_weights
printf '%s' '{"Q": {"random": {"shape": [2, 2], "mean": "nan"}}, "K": [[1, 0]], "V": [[1]]}' > random_nan.json
expect_exit 2 "\\\$.Q.random.mean: expected a finite number" -- "$A" run random_nan.json
printf '%s' '{"Q": [[1, 0]], "K": [[1, 0], ["inf", 1]], "V": [[1], [2]], "allow_nonfinite": true}' > inf_allowed.json
expect_exit 0 "allow_nonfinite" -- "$A" run inf_allowed.json
printf '%s' '{"Q": [[1]], "K": [[1], [2]], "V": [[1], [2]], "mask": {"additive": [[0, "inf"]]}, "allow_nonfinite": true}' > mask.json
expect_exit 2 "\\\$.mask.additive\[0\]\[1\]: expected a finite bias" -- "$A" run mask.json

# the problem line: "mask = lengths" (it said "nonelengths"), "1 query" (it said "1 queries")
expect_exit 0 "mask = lengths, f64" -- "$A" run "$SOURCE_DIR/tests/golden/mha_batch_padding.json" --steps weights
printf '%s' '{"Q": [[1, 0]], "K": [[1, 0], [0, 1]], "V": [[1], [2]]}' > one.json
expect_exit 0 "n = 1 query, m = 2 keys" -- "$A" run one.json

# a number past double's range is bad input (exit 2), not an abort
printf '%s' '{"Q": [[1e400]], "K": [[1]], "V": [[1]]}' > overflow.json
expect_exit 2 "overflow.json: malformed JSON at line 1, column 9: number overflow parsing .1e400. \(out of the range of a double\)" -- "$A" run overflow.json
printf '{"Q": [[1]],\n "K": [[1]],\n "V": [[-1.7976931348623159e308, 1e999]]}' > overflow2.json
expect_exit 2 "overflow2.json: malformed JSON at line 3, column 9: number overflow parsing .-1.7976931348623159e308." -- "$A" check overflow2.json
printf '{"attn_trace": 1,\n  "steps": [{"name": "weights", "data": [[2e308]]}]}' > golden-overflow.json
expect_exit 2 "golden-overflow.json: malformed JSON at line 2, column 43: number overflow parsing .2e308." -- "$A" check "$E" --golden golden-overflow.json

# a million nested "[" once overflowed the stack (exit 139): refused before any recursion
{ printf '{"Q": '; head -c 1000000 /dev/zero | tr '\0' '['; } > deep.json
expect_exit 2 "deep.json: malformed JSON at line 1, column 70: nested more than 64 levels deep" -- "$A" run deep.json
expect_exit 2 "deep.json: malformed JSON at line 1, column 70: nested more than 64 levels deep" -- "$A" check "$E" --golden deep.json

# explain: nothing silent, nothing aborts
expect_exit 2 "--tile '99999999999999999999999,0': the index is too large" -- "$A" explain "$E" --cell 'l[0,0]' --tile 99999999999999999999999,0
expect_exit 2 "--prefill requires --t" -- "$A" explain "$E" --cell 'scores[0,0]' --prefill 1
expect_exit 2 "--block-k requires --tile" -- "$A" explain "$E" --cell 'scores[0,0]' --block-k 3
expect_exit 2 "--t -1" -- "$A" explain "$E" --cell 'weights[0,0]' --t -1

finish
