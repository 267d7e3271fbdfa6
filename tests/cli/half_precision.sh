# Half precision (docs/PROBLEM.md#dtype-half-precision): f16 and bf16 runs against the
# independent reference of tools/make_half_goldens.py (numpy in f32, rounded to the half
# type exactly where the rounding model rounds; each expect entry is within 1 ulp).
source "$SOURCE_DIR/tests/cli/lib.sh"
work=$PWD  # the test's own temp dir, for the files it writes
cd "$SOURCE_DIR"
T="$ATTN_TRACE"
# run, decode, tiled, grad and grad --tiled (check picks the command from the entries).
expect_exit 0 "^20 passed, 0 failed$" -- "$T" check tests/golden/half/*.json
# The same files in f32 must fail: the half rounding is what they check.
expect_exit 1 " failed$" -- "$T" check tests/golden/half/qkv_causal_f16.json --dtype f32
expect_exit 1 " failed$" -- "$T" check tests/golden/half/mha_bias_bf16.json --dtype f16
for golden in decode_gqa_f16 tiled_causal_bf16 grad_gqa_f16 grad_tiled_gqa_bf16; do
  expect_exit 1 " failed$" -- "$T" check "tests/golden/half/$golden.json" --dtype f32
done
# f16 overflows where f64 does not: traced, noted, exit 0 (scores past 65504 become inf).
expect_exit 0 "note: f16 \\(traced as the type stores it\\): overflow: scores \\(head 0\\)\\[0, 0\\] is -inf" -- "$T" run tests/golden/half/overflow_f16.json
expect_exit 0 "\"dtype\":\"bf16\"" -- "$T" run tests/golden/half/overflow_f16.json --dtype bf16 --format json
# The exact values of the type: 1/3 is 0.333251953125 in f16, 0.333984375 in bf16.
echo '{"Q": [[0.3333333333333333]], "K": [[1]], "V": [[1]], "scale": "none"}' > "$work/third.json"
expect_exit 0 '"data":\[\[0\.333251953125\]\]' -- "$T" run "$work/third.json" --dtype f16 --format json --steps scores
expect_exit 0 '"data":\[\[0\.333984375\]\]' -- "$T" run "$work/third.json" --dtype bf16 --format json --steps scores
# explain multiplies the values as the type stores them (x = 0.1 is 0.10009765625 in bf16).
echo '{"X": [[0.1]], "W_Q": [[1]], "W_K": [[1]], "W_V": [[1]]}' > "$work/tenth.json"
expect_exit 0 "x_0 = \(0\.1000976562\)" -- "$T" explain "$work/tenth.json" --dtype bf16 --cell q[0,0] --precision 10
# explain in a half type ends the cell with its one rounding: the f32 value, the stored one, the difference
# (at 4 decimals both would read 0.1482, so they get 8 significant digits); f64 has no such line.
expect_exit 0 "weights_01 = 0\.1482238 \(f32\) → 0\.14819336 \(f16\),  0\.14819336 - 0\.1482238 = -3\.04e-05" -- "$T" explain examples/damaged_on_arrival.json --dtype f16 --cell "weights[0,1]"
checks=$((checks + 1))
if "$T" explain examples/damaged_on_arrival.json --cell "weights[0,1]" | grep -q "the one rounding"; then
  echo "FAIL: explain in f64 explains a rounding"
  failures=$((failures + 1))
fi
# grad --tiled in a half type reads its forward pass from the full trace (the fast path takes f64 and f32 only).
expect_exit 0 "max_abs_diff_vs_full = 0\.000122" -- "$T" grad examples/damaged_on_arrival.json --dtype f16 --tiled --steps grad_q
# A dtype the tool does not know, on the command line or in the file, names the choices.
expect_exit 2 "f64, f32, f16, bf16" -- "$T" run "$work/third.json" --dtype f8
echo '{"Q": [[1]], "K": [[1]], "V": [[1]], "dtype": "f8"}' > "$work/f8.json"
expect_exit 2 'f8.json: \$\.dtype: expected f64, f32, f16 or bf16, found "f8"' -- "$T" run "$work/f8.json"
# The fast path takes f64 and f32 only.
expect_exit 2 "the fast path computes in f64 or f32 only" -- "$T" run "$work/third.json" --dtype bf16 --fast
# Past the budget without --fast, the advice does not tell one to leave out a --fast never given.
"$T" random --n 9000 --dk 4 --seed 1 -o "$work/big.json"
expect_exit 2 "would hold about 9.7 GiB, over the 4.0 GiB budget \(--max-memory\), and f16 is traced step by step only .*: raise --max-memory, lower n, or use --dtype f32, which takes the fast path" -- "$T" run "$work/big.json" --dtype f16
finish
