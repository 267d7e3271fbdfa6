# `precision` and the error against f64 of every step (docs/COMMANDS.md#precision,
# docs/PROBLEM.md#dtype-half-precision).
source "$SOURCE_DIR/tests/cli/lib.sh"
work=$PWD  # the test's own temp dir, for the files it writes
cd "$SOURCE_DIR"
T="$ATTN_TRACE"
P=examples/half_overflow.json  # a scaled score of 12.5 > ln 65504 ≈ 11.09
# Without the max shift f16's exp(12.5) overflows first at exp; f32 and bf16 survive.
expect_exit 0 '"dtype":"f16","first_nonfinite":"exp","first_nonfinite_head":0' -- "$T" precision "$P" --no-max-shift --format json
expect_exit 0 '"dtype":"f32","first_nonfinite":null' -- "$T" precision "$P" --no-max-shift --format json
expect_exit 0 '"dtype":"bf16","first_nonfinite":null' -- "$T" precision "$P" --no-max-shift --format json
expect_exit 0 '"name":"exp","head":0,"max_abs_error":"inf"' -- "$T" precision "$P" --no-max-shift --format json
expect_exit 0 '^first inf/NaN +none +exp \(head 0\) +none$' -- "$T" precision "$P" --no-max-shift
# With the shift nothing overflows, and f64's own entry is all zeros.
expect_exit 0 '"dtype":"f16","first_nonfinite":null' -- "$T" precision "$P" --format json
expect_exit 0 '"dtype":"f64","first_nonfinite":null,"steps":\[\{"name":"q","max_abs_error":0\.0,"max_rel_error":0\.0\}' -- "$T" precision "$P" --format json
# row_max is the shift: it is a step only with the shift.
expect_exit 0 '"name":"row_max"' -- "$T" precision "$P" --format json
if "$T" precision "$P" --no-max-shift --format json | grep -q '"name":"row_max"'; then fail "--no-max-shift still has a row_max step"; fi
checks=$((checks + 1))
# The documents: LaTeX compiles in a plain article, Markdown renders, the chart is an SVG with a line per type.
require_document_tools
{ latex_preamble; "$T" precision "$P" --no-max-shift --format latex; echo '\end{document}'; } > "$work/precision.tex"
(cd "$work" && check_latex precision)
"$T" precision "$P" --no-max-shift --format markdown > "$work/precision.md"
(cd "$work" && check_markdown precision)
expect_exit 0 "" -- "$T" precision "$P" --no-max-shift --svg "$work/precision.svg"
svg=$work/precision.svg
head -c 5 "$svg" | grep -q '^<svg' || fail "the chart is not an SVG"
[ "$(grep -c '<polyline' "$svg")" = 3 ] || fail "the chart has not one line per type (f32, f16, bf16)"
for colour in '#1f5fa8' '#d62728' '#e07b18'; do
  grep -q "<polyline [^>]*stroke=\"$colour\"" "$svg" || fail "the chart has no line in $colour"
done
grep -q '>f16 (inf)</text>' "$svg" || fail "the chart's legend does not mark f16's inf"
grep -q '>bf16</text>' "$svg" || fail "the chart's legend does not name bf16"
grep -q '>exp h0</text>' "$svg" || fail "the chart does not label the step exp of head 0"
grep -q '<title>f16 exp (head 0): inf</title>' "$svg" || fail "f16's exp point has not its tooltip"
checks=$((checks + 7))
# A batched problem: the chart and the table name each step's batch and head. Batch 1's
# score 300 · 300 = 90 000 passes f16's 65 504; batch 0's scores are 1.
echo '{"X": [[[1], [1]], [[300], [1]]], "W_Q": [[1]], "W_K": [[1]], "W_V": [[1]], "scale": "none"}' > "$work/batched.json"
expect_exit 0 '"dtype":"f16","first_nonfinite":"scores","first_nonfinite_head":0,"first_nonfinite_batch":1,' -- "$T" precision "$work/batched.json" --format json
expect_exit 0 '^first inf/NaN +none +scores \(batch 1, head 0\) +none$' -- "$T" precision "$work/batched.json"
expect_exit 0 '^q +1/– +0 +0 +0 +0 +0 +0$' -- "$T" precision "$work/batched.json"
expect_exit 0 '^scores +1/0 +0 +0 +inf +inf +1\.12e\+02 +1\.24e-03$' -- "$T" precision "$work/batched.json"
"$T" precision "$work/batched.json" --svg "$work/batched.svg" > /dev/null
grep -q '>scores b1 h0</text>' "$work/batched.svg" || fail "the chart does not label batch 1's scores"
grep -q '<title>f16 scores (batch 1, head 0): inf</title>' "$work/batched.svg" || fail "batch 1's f16 scores point has not its tooltip"
# A title of 60 two-byte characters fits the chart's 86: it is not cut.
title=$(printf 'é%.0s' $(seq 60))
echo "{\"title\": \"$title\", \"Q\": [[1]], \"K\": [[1]], \"V\": [[1]]}" > "$work/long_title.json"
"$T" precision "$work/long_title.json" --svg "$work/long_title.svg" > /dev/null
grep -q ">$title</text>" "$work/long_title.svg" || fail "a title of 60 characters (120 bytes) was cut"
checks=$((checks + 3))
# The table's columns fit the steps' rows: the last row's "exp (head 0)" spans f16's two
# columns, it does not widen the first (the header and every row have the same width).
"$T" precision "$P" --no-max-shift > "$work/table.txt"
expect_exit 0 '^step           head   f32 abs   f32 rel  f16 abs  f16 rel  bf16 abs  bf16 rel$' -- cat "$work/table.txt"
expect_exit 0 '^exp               0  5\.27e-03  2\.11e-08      inf      inf  4\.93e\+01  2\.78e-03$' -- cat "$work/table.txt"
expect_exit 0 '^first inf/NaN                      none      exp \(head 0\)                none$' -- cat "$work/table.txt"
# --empty-rows, --train and --eval as run takes them.
blocked='{"blocked": [[true, true, true], [false, false, false], [false, false, false]]}'
expect_exit 2 'query 0 \("damaged"\) can read no key.*--empty-rows zero\|nan' -- "$T" precision examples/damaged_on_arrival.json --mask "$blocked"
expect_exit 0 '^first inf/NaN +none +none +none$' -- "$T" precision examples/damaged_on_arrival.json --mask "$blocked" --empty-rows zero
expect_exit 0 '"name":"keep"' -- "$T" precision examples/dropout_train.json --train --format json
if "$T" precision examples/dropout_train.json --eval --format json | grep -q '"name":"keep"'; then fail "precision --eval still applies the dropout"; fi
checks=$((checks + 1))
# In f16 a row whose scores all overflow to −inf (300 · −300, 300 · −250) is not an empty
# row: the mask lets both keys through, and the weights are 0/0 = NaN.
echo '{"Q": [[300]], "K": [[-300], [-250]], "V": [[1], [2]], "scale": "none"}' > "$work/row_overflow.json"
expect_exit 0 '"name":"weights".*"data":\[\["nan","nan"\]\]' -- "$T" run "$work/row_overflow.json" --dtype f16 --format json --steps weights
expect_exit 0 '^first inf/NaN +none +scores \(head 0\) +none$' -- "$T" precision "$work/row_overflow.json"
for command in decode tiled; do
  expect_exit 0 '"name":"out".*"data":\[\["nan"\]\]' -- "$T" "$command" "$work/row_overflow.json" --dtype f16 --format json --steps out
done
expect_exit 2 "--format 'csv': expected one of text, json, markdown, latex" -- "$T" precision "$P" --format csv
expect_exit 2 "nothing.json" -- "$T" precision "$work/nothing.json"
# Every step of a run in f32 or a half type carries its exact error against f64:
# 1/3 is 0.333251953125 in f16, so the error is 0.3333333333333333 − 0.333251953125.
echo '{"Q": [[0.3333333333333333]], "K": [[1]], "V": [[1]], "scale": "none"}' > "$work/third.json"
expect_exit 0 '"max_abs_error_vs_f64":8\.138020833331483e-05,"data":\[\[0\.333251953125\]\]' -- "$T" run "$work/third.json" --dtype f16 --format json --steps scores
expect_exit 0 '"max_abs_error_vs_f64":0\.0,' -- "$T" run "$work/third.json" --dtype f16 --format json --steps weights
# decode's masked, tiled's masked and m hold the same 1/3; grad's grad_weights = d_out Vᵀ is
# 1/3 with V = [[1/3]]. Every step of each carries its error.
echo '{"Q": [[1]], "K": [[1]], "V": [[0.3333333333333333]], "scale": "none"}' > "$work/third_v.json"
third_error='"max_abs_error_vs_f64":8\.138020833331483e-05,"data":\[\[0\.333251953125\]\]'
expect_exit 0 "\"name\":\"masked\",[^{]*$third_error" -- "$T" decode "$work/third.json" --dtype f16 --format json
expect_exit 0 "\"name\":\"m\",[^{]*$third_error" -- "$T" tiled "$work/third.json" --dtype f16 --format json
expect_exit 0 "\"name\":\"grad_weights\",[^{]*$third_error" -- "$T" grad "$work/third_v.json" --dtype f16 --format json
for command in decode tiled grad; do
  for file in third third_v; do
    "$T" "$command" "$work/$file.json" --dtype bf16 --format json > "$work/$command.json"
    steps=$(grep -o '"symbol":' "$work/$command.json" | wc -l)
    measured=$(grep -o '"max_abs_error_vs_f64":' "$work/$command.json" | wc -l)
    [ "$steps" -gt 3 ] && [ "$steps" = "$measured" ] || fail "$command in bf16: $measured of $steps steps carry max_abs_error_vs_f64"
    checks=$((checks + 1))
  done
done
# The f64 run it is measured against is in the memory budget: the same limit passes the
# trace in f64 and refuses it in f16 (random n = m = 64, d_k = 4: 256 KiB per full trace).
"$T" random --n 64 --dk 4 --seed 1 -o "$work/r64.json"
for limit in run:400K:out decode:800K:out tiled:4M:out grad:700K:grad_q; do
  IFS=: read -r command size step <<<"$limit"
  expect_exit 0 "" -- "$T" "$command" "$work/r64.json" --steps "$step" --max-memory "$size"
  expect_exit 2 "in f16, with the f64 run it is measured against, would hold about" -- "$T" "$command" "$work/r64.json" --dtype f16 --steps "$step" --max-memory "$size"
done
if "$T" run "$work/third.json" --format json | grep -q max_abs_error_vs_f64; then fail "an f64 run carries an error against itself"; fi
checks=$((checks + 1))
# The text marks the cells a half type lost: overflowed to ±inf, or fell to 0.
expect_exit 0 '^big +-inf↑' -- "$T" run tests/golden/half/overflow_f16.json --steps scores
# A marked table's headers end over the digits, a column before the marks: "big" over "-inf".
expect_exit 0 '^              big           neg     small $' -- "$T" run tests/golden/half/overflow_f16.json --steps scores
expect_exit 0 '^↑ 2 cells overflowed to ±inf where f64 is finite$' -- "$T" run tests/golden/half/overflow_f16.json --steps scores
expect_exit 0 '^↓ 1 cell fell to 0 where f64 is not 0$' -- "$T" run tests/golden/half/overflow_f16.json --steps weights
expect_exit 0 'max \|error\| vs f64 = 0\.000123333' -- "$T" run "$P" --dtype f16 --steps weights
# The exercise topic: its file passes check in f16, and its answer states the overflow.
"$T" exercise --topic precision --seed 3 --format json > "$work/exercise.json"
expect_exit 0 "^1 passed, 0 failed$" -- "$T" check "$work/exercise.json"
expect_exit 0 "Without the max shift, f16's first inf is at exp" -- "$T" exercise --topic precision --seed 3 --format text
finish
