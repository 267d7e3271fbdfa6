# The backward pass from the command line (SPEC §18): every step, every format,
# the budget, and bad input (exit 2).
source "$SOURCE_DIR/tests/cli/lib.sh"
T=$ATTN_TRACE
E=$SOURCE_DIR/examples

out=$("$T" grad "$E/damaged_on_arrival.json" --mask causal)
for header in "grad_concat  dL/d concat \(the given d_out\)  \(3, 2\)" "grad_out  grad_concat columns 0…1  \(3, 2\)  head 0" \
              "grad_weights  grad_out Vᵀ  \(3, 3\)" "grad_masked  A ⊙ \(grad_weights − rowsum\(grad_weights ⊙ A\)\)  \(3, 3\)" \
              "grad_scaled" "grad_scores  s · grad_scaled" "grad_q  grad_scores K  \(3, 2\)" "grad_k  grad_scoresᵀ Q  \(3, 2\)" \
              "grad_v  Aᵀ grad_out  \(3, 2\)" "grad_x  grad_q W_Qᵀ \+ grad_k W_Kᵀ \+ grad_v W_Vᵀ  \(3, 4\)" "grad_W_Q  Xᵀ grad_q  \(4, 2\)" \
              "grad_W_K" "grad_W_V"; do
  checks=$((checks + 1))
  grep -Eq -- "$header" <<<"$out" || fail "grad's text has no line /$header/"
done
# the blocked cells of the first row pass exactly 0
expect_exit 0 "^damaged +0 +0 +0$" -- "$T" grad "$E/damaged_on_arrival.json" --mask causal --steps grad_masked
expect_exit 0 '"grad_masked"' -- "$T" grad "$E/damaged_on_arrival.json" --format json
expect_exit 0 "jacobian_norm = 0\.[0-9]+" -- "$T" grad "$E/damaged_on_arrival.json" --row 1 --steps jacobian
expect_exit 0 "grad_k  RoPE\^\(-1\)\(grad_k_rot\)" -- "$T" grad "$SOURCE_DIR/tests/golden/grad_rope.json" --steps grad_k --head 0
expect_exit 0 "grad_k .*summed over the 2 query heads that read it" -- "$T" grad "$SOURCE_DIR/tests/golden/grad_gqa.json" --steps grad_k
expect_exit 0 "grad_dropped  grad_out Vᵀ" -- "$T" grad "$SOURCE_DIR/tests/golden/grad_dropout.json" --steps grad_dropped --head 0
expect_exit 0 "1 passed, 0 failed" -- "$T" check "$SOURCE_DIR/tests/golden/grad_mha.json"
# the command line's --d-out wins over the file's d_out
expect_exit 0 "grad_concat  dL/d concat \(the given d_out\)" -- "$T" grad "$SOURCE_DIR/tests/golden/grad_one_head.json" --d-out random:2 --steps grad_concat

# The tiled backward: lse, delta, tile steps, and equal to the untiled gradients.
expect_exit 0 "grad_s  p ⊙ \(grad_p − delta\)  \(1, 2\)  head 0  tile \[1, 0\]" -- "$T" grad "$E/damaged_on_arrival.json" --mask causal --tiled --block-q 1 --block-k 2
expect_exit 0 "max_abs_diff_vs_full = [0-9.e-]+" -- "$T" grad "$SOURCE_DIR/tests/golden/grad_rope.json" --tiled --steps grad_q
expect_exit 0 "tiles_skipped = 1" -- "$T" grad "$SOURCE_DIR/tests/golden/grad_causal_softcap.json" --tiled --steps grad_q
expect_exit 2 "--row needs the whole weights of a row" -- "$T" grad "$E/damaged_on_arrival.json" --tiled --row 1
expect_exit 2 "--block-q 0" -- "$T" grad "$E/damaged_on_arrival.json" --tiled --block-q 0

# explain writes a grad cell term by term, with the same numbers as the trace.
expect_exit 0 "grad_z_21 = 0\.2483 × \(0 - 1\.2552\) = -0\.3116" -- "$T" explain "$E/damaged_on_arrival.json" --mask causal --cell "grad_masked[2,1]"
expect_exit 0 "grad_A_10 = 1 × 2 \+ 1 × 0 = 2" -- "$T" explain "$E/damaged_on_arrival.json" --mask causal --cell "grad_weights[1,0]"
expect_exit 0 "0\.1242 × 1 \+ 0\.3333 × 1 \+ 0\.5035 × 1 = 0\.961" -- "$T" explain "$E/damaged_on_arrival.json" --cell "grad_v[0,1]"
expect_exit 0 "the blocked|no gradient passes" -- "$T" explain "$E/damaged_on_arrival.json" --mask causal --cell "grad_masked[0,2]"

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
finish
