# The backward pass from the command line (docs/COMMANDS.md#grad): every step, every format,
# the budget, and bad input (exit 2).
source "$SOURCE_DIR/tests/cli/lib.sh"
T=$ATTN_TRACE
E=$SOURCE_DIR/examples

out=$("$T" grad "$E/damaged_on_arrival.json" --mask causal)
# Each heading: the step's name, its symbol (docs/NOTATION.md) and the formula in symbols.
for header in "grad_concat  dO_cat = ∂L/∂O_cat \(the given d_out\)  \(3, 2\)" "grad_out  dO = dO_cat\[:, 0…1\]  \(3, 2\)  head 0" \
              "grad_weights  dA = dO Vᵀ  \(3, 3\)" "grad_masked  dZ = A ⊙ \(dA − rowsum\(dA ⊙ A\)\)  \(3, 3\)" \
              "grad_scaled  dS_s = dZ" "grad_scores  dS = s · dS_s" "grad_q  dQ = dS K  \(3, 2\)" "grad_k  dK = dSᵀ Q  \(3, 2\)" \
              "grad_v  dV = Aᵀ dO  \(3, 2\)" "grad_x  dX = dQ W_Qᵀ \+ dK W_Kᵀ \+ dV W_Vᵀ  \(3, 4\)" "grad_W_Q  dW_Q = Xᵀ dQ  \(4, 2\)" \
              "grad_W_K" "grad_W_V"; do
  checks=$((checks + 1))
  grep -Eq -- "$header" <<<"$out" || fail "grad's text has no line /$header/"
done
# the blocked cells of the first row pass exactly 0
expect_exit 0 "^damaged +0 +0 +0$" -- "$T" grad "$E/damaged_on_arrival.json" --mask causal --steps grad_masked
expect_exit 0 '"grad_masked"' -- "$T" grad "$E/damaged_on_arrival.json" --format json
expect_exit 0 "jacobian_norm = 0\.[0-9]+" -- "$T" grad "$E/damaged_on_arrival.json" --row 1 --steps jacobian
expect_exit 0 "grad_k  dK = RoPE⁻¹\(dK_rot\)" -- "$T" grad "$SOURCE_DIR/tests/golden/grad_rope.json" --steps grad_k --head 0
expect_exit 0 "grad_k .*summed over the 2 query heads that read it" -- "$T" grad "$SOURCE_DIR/tests/golden/grad_gqa.json" --steps grad_k
expect_exit 0 "grad_dropped  dA_d = dO Vᵀ" -- "$T" grad "$SOURCE_DIR/tests/golden/grad_dropout.json" --steps grad_dropped --head 0
expect_exit 0 "1 passed, 0 failed" -- "$T" check "$SOURCE_DIR/tests/golden/grad_mha.json"
# check runs grad for jacobian (with its row), lse, delta and the backward's tiles (grad --tiled)
expect_exit 0 "PASS .*grad_jacobian.json \(grad " -- "$T" check "$SOURCE_DIR/tests/golden/grad_jacobian.json"
expect_exit 0 "PASS .*grad_tiled.json \(grad " -- "$T" check "$SOURCE_DIR/tests/golden/grad_tiled.json"
expect_exit 1 "p \(head 0, tile \[0, 0\]\): expected shape \(2, 2\), got \(1, 2\)" -- "$T" check "$SOURCE_DIR/tests/golden/grad_tiled.json" --block-q 1
"$T" grad "$E/damaged_on_arrival_causal.json" --row 2 --format json > jacobian_trace.json
expect_exit 0 "PASS .*\(grad [0-9]+ steps" -- "$T" check "$E/damaged_on_arrival_causal.json" --golden jacobian_trace.json
sed -E 's/"jacobian_row": ?2(\.0)?/"jacobian_row": 1/' jacobian_trace.json > wrong_row.json
expect_exit 1 "jacobian \(head 0\)" -- "$T" check "$E/damaged_on_arrival_causal.json" --golden wrong_row.json
printf '%s' '{"Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[1], [2]], "expect": [{"name": "jacobian", "data": [[0, 0], [0, 0]]}]}' > norow.json
expect_exit 2 'norow.json: \$\.expect\[0\]: a jacobian entry needs "row"' -- "$T" check norow.json
printf '%s' '{"Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[1], [2]], "expect": [{"name": "grad_q", "row": 1, "data": [[0, 0], [0, 0]]}]}' > badrow.json
expect_exit 2 '\$\.expect\[0\]\.row: only a jacobian entry has a row' -- "$T" check badrow.json
printf '%s' '{"Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[1], [2]], "expect": [{"name": "jacobian", "row": 0, "data": [[0, 0], [0, 0]]},
  {"name": "jacobian", "row": 1, "data": [[0, 0], [0, 0]]}]}' > tworows.json
expect_exit 2 'jacobian entries of rows 0 and 1' -- "$T" check tworows.json
# the command line's --d-out wins over the file's d_out
expect_exit 0 "grad_concat  dO_cat = ∂L/∂O_cat \(the given d_out\)  \(4, 4\)" -- "$T" grad "$SOURCE_DIR/tests/golden/grad_one_head.json" --d-out random:2 --steps grad_concat

# The tiled backward: lse, delta, tile steps, and equal to the untiled gradients.
expect_exit 0 "grad_s  dZ_ij = A_ij ⊙ \(dA_ij − δ\): the tile's dZ  \(1, 2\)  head 0  tile \[1, 0\]" -- "$T" grad "$E/damaged_on_arrival.json" --mask causal --tiled --block-q 1 --block-k 2
expect_exit 0 "max_abs_diff_vs_full = [0-9.e-]+" -- "$T" grad "$SOURCE_DIR/tests/golden/grad_rope.json" --tiled --steps grad_q
expect_exit 0 "tiles_skipped = 1" -- "$T" grad "$SOURCE_DIR/tests/golden/grad_causal_softcap.json" --tiled --steps grad_q
expect_exit 2 "--row needs the whole weights of a row" -- "$T" grad "$E/damaged_on_arrival.json" --tiled --row 1
expect_exit 2 "--block-q 0" -- "$T" grad "$E/damaged_on_arrival.json" --tiled --block-q 0

# explain writes a grad cell term by term, with the same numbers as the trace.
expect_exit 0 "dZ_21 = 0\.2483 × \(0 - 1\.2552\) = -0\.3116" -- "$T" explain "$E/damaged_on_arrival.json" --mask causal --cell "grad_masked[2,1]"
expect_exit 0 "dA_10 = 1 × 2 \+ 1 × 0 = 2" -- "$T" explain "$E/damaged_on_arrival.json" --mask causal --cell "grad_weights[1,0]"
expect_exit 0 "0\.1242 × 1 \+ 0\.3333 × 1 \+ 0\.5035 × 1 = 0\.961" -- "$T" explain "$E/damaged_on_arrival.json" --cell "grad_v[0,1]"
expect_exit 0 "the blocked|no gradient passes" -- "$T" explain "$E/damaged_on_arrival.json" --mask causal --cell "grad_masked[0,2]"
expect_exit 0 "0\.3536 × 1 \+ \(-0\.3536\) × 0 \+ 0 × 0 = 0\.3536" -- "$T" explain "$E/damaged_on_arrival.json" --mask causal --cell "grad_q[1,0]"
expect_exit 0 "through W_V: row 1 of grad_v times row 0 of W_V" -- "$T" explain "$E/damaged_on_arrival.json" --mask causal --cell "grad_x[1,0]"
expect_exit 2 "--head 3: grad_v is per KV head and the problem has 2 \(0 to 1\)" -- "$T" explain "$E/gqa_8q_2kv.json" --cell "grad_v[0,0]" --head 3

# Too big for the full backward trace: refused with its size, as run refuses.
"$T" random --n 20000 --dk 4 --seed 1 -o big.json
expect_exit 2 "grad.*(GiB|GB)" -- "$T" grad big.json

# Bad input
printf '%s' '{"Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[1], [2]], "d_out": [[1, 2], [3, 4]]}' > bad.json
expect_exit 2 "bad.json: \\\$\.d_out: dL/d\(output\) has the output's shape: \(2, 1\)" -- "$T" grad bad.json
printf '%s' '{"Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[1], [2]]}' > good.json
expect_exit 2 "--row 2: the problem has 2 queries \(0 to 1\)" -- "$T" grad good.json --row 2
expect_exit 2 "--d-out twos: expected ones or random:SEED" -- "$T" grad good.json --d-out twos
expect_exit 2 "--d-out random:-1" -- "$T" grad good.json --d-out random:-1
expect_exit 2 "grad does not trace MLA problems yet" -- "$T" grad "$E/mla_small.json"

# The fused backward (--fast): the same gradients as the step-by-step backward (every
# number of grad_q, grad_k and grad_v, as printed), lse and delta, no (n, m) step.
"$T" grad "$E/damaged_on_arrival.json" --mask causal --steps grad_q,grad_k,grad_v | grep -E '^[a-z]+ +[-0-9]' > untiled_numbers.txt
"$T" grad "$E/damaged_on_arrival.json" --mask causal --fast --steps grad_q,grad_k,grad_v | grep -E '^[a-z]+ +[-0-9]' > fused_numbers.txt
checks=$((checks + 1))
[ "$(wc -l < fused_numbers.txt)" -eq 9 ] && cmp -s untiled_numbers.txt fused_numbers.txt || fail "grad --fast's gradients differ from grad's: $(diff untiled_numbers.txt fused_numbers.txt)"
expect_exit 0 "^arrival  1\.3933$" -- "$T" grad "$E/damaged_on_arrival.json" --mask causal --fast --steps lse
expect_exit 0 "tiles_skipped = 24" -- "$T" grad "$SOURCE_DIR/tests/golden/grad_gqa.json" --fast --mask causal --block-q 1 --block-k 1 --steps lse
out=$("$T" grad "$E/damaged_on_arrival.json" --fast --format json)
checks=$((checks + 1))
! grep -Eq '"(grad_weights|grad_masked|grad_scores)"' <<<"$out" && grep -q '"lse"' <<<"$out" || fail "grad --fast keeps an (n, m) step or no lse"
expect_exit 2 "the fused backward computes in f64 or f32 only, and f16 is traced step by step: leave out --fast or use --dtype f32" -- "$T" grad "$E/damaged_on_arrival.json" --fast --dtype f16
expect_exit 2 "--fast is the fused backward and --tiled the step-by-step one: choose one" -- "$T" grad "$E/damaged_on_arrival.json" --fast --tiled
expect_exit 2 "--row needs the whole weights of a row, which the fused backward never holds" -- "$T" grad "$E/damaged_on_arrival.json" --fast --row 1
expect_exit 3 "cannot run this fused attention backward: it has no softcap" -- "$T" grad "$SOURCE_DIR/tests/golden/grad_causal_softcap.json" --fast
printf '%s' '{"Q": [[1, 0], [0, 1], [1, 1]], "K": [[1, 0], [0, 1]], "V": [[1, 2], [3, 4]], "mask": "causal-bottom-right"}' > empty_row.json
expect_exit 2 "empty" -- "$T" grad empty_row.json --fast
# Under the nan policy the empty row 0's NaN reaches grad_v, --fast and --tiled as in grad.
for way in "" --fast --tiled; do
  expect_exit 0 "^1 +nan +nan$" -- "$T" grad empty_row.json --empty-rows nan $way --steps grad_v
  expect_exit 0 "^2 +-0\.7071 +0\.7071$" -- "$T" grad empty_row.json --empty-rows nan $way --steps grad_q
done
expect_exit 2 "--grad" -- "$ATTN_TRACE" bench --grad --n 8 --cache 8
# --heatmap and --svg draw the forward weights (docs/COMMANDS.md#grad), with every way of the backward.
for way in "" --fast --tiled; do
  expect_exit 0 "^weights  head 0  \(2, 2\)" -- "$ATTN_TRACE" grad "$SOURCE_DIR/examples/two_tokens_causal.json" $way --heatmap --color never
done
expect_exit 0 "grad_q" -- "$ATTN_TRACE" grad "$SOURCE_DIR/examples/two_tokens_causal.json" --svg weights.svg
expect_exit 0 "<rect" -- cat weights.svg
# --steps names the printed (gradient) steps; the picture is then of the weights, with any format.
expect_exit 0 "^grad_q,0,1$" -- "$ATTN_TRACE" grad "$SOURCE_DIR/examples/two_tokens_causal.json" --steps grad_q --format csv --svg csv_weights.svg
expect_exit 0 "weights" -- cat csv_weights.svg
# An SVG past its cell limit is refused before the forward and the backward run (n = 3000
# held 850 MB and a second for nothing): the refusal comes under a 2-second limit.
"$ATTN_TRACE" random --n 3000 --dk 8 -o g3000.json
start=$(date +%s%N)
expect_exit 2 "error: --svg would draw 9000000 cells \(the limit is 250000\)" -- "$ATTN_TRACE" grad g3000.json --fast --svg big.svg
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
expect_exit 0 "" -- test "$elapsed_ms" -lt 2000
# Untiled, the drawn forward trace sits beside the gradients' own (two full traces): counted.
"$ATTN_TRACE" random --n 500 --dk 4 --seed 1 > m500.json
expect_exit 0 "grad_q" -- "$ATTN_TRACE" grad m500.json --steps grad_q --max-memory 32M --max-output 64M
expect_exit 2 "m500.json: --heatmap draws the forward weights A, .* about 15 MiB beside the gradients'; the limit is 32 MiB" -- \
  "$ATTN_TRACE" grad m500.json --heatmap --max-memory 32M
# permute's trace holds no matrix to draw: it has neither option.
expect_exit 2 "unknown option '--heatmap'" -- "$ATTN_TRACE" permute "$SOURCE_DIR/examples/two_tokens_causal.json" --heatmap
"$ATTN_TRACE" random --n 3000 --dk 4 --seed 1 > long.json
expect_exit 2 "long.json: --heatmap draws the forward weights A, whose full trace .* would hold about 549 MiB beside the gradients'; the limit is 64 MiB \(--max-memory\)" -- \
  "$ATTN_TRACE" grad long.json --fast --heatmap --max-memory 64M
finish
