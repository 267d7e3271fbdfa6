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
[ "$(grep -c '<polyline' "$work/precision.svg")" = 3 ] || fail "the chart has not one line per type (f32, f16, bf16)"
grep -q '>f16 (inf)</text>' "$work/precision.svg" || fail "the chart's legend does not mark f16's inf"
checks=$((checks + 2))
expect_exit 2 "--format 'csv': expected one of text, json, markdown, latex" -- "$T" precision "$P" --format csv
expect_exit 2 "nothing.json" -- "$T" precision "$work/nothing.json"
# Every step of a run in f32 or a half type carries its exact error against f64:
# 1/3 is 0.333251953125 in f16, so the error is 0.3333333333333333 − 0.333251953125.
echo '{"Q": [[0.3333333333333333]], "K": [[1]], "V": [[1]], "scale": "none"}' > "$work/third.json"
expect_exit 0 '"max_abs_error_vs_f64":8\.138020833331483e-05,"data":\[\[0\.333251953125\]\]' -- "$T" run "$work/third.json" --dtype f16 --format json --steps scores
expect_exit 0 '"max_abs_error_vs_f64":0\.0,' -- "$T" run "$work/third.json" --dtype f16 --format json --steps weights
for command in decode tiled grad; do
  expect_exit 0 '"max_abs_error_vs_f64":' -- "$T" "$command" examples/damaged_on_arrival.json --dtype bf16 --format json
done
if "$T" run "$work/third.json" --format json | grep -q max_abs_error_vs_f64; then fail "an f64 run carries an error against itself"; fi
checks=$((checks + 1))
# The text marks the cells a half type lost: overflowed to ±inf, or fell to 0.
expect_exit 0 '^big +-inf↑' -- "$T" run tests/golden/half/overflow_f16.json --steps scores
expect_exit 0 '^↑ 2 cells overflowed to ±inf where f64 is finite$' -- "$T" run tests/golden/half/overflow_f16.json --steps scores
expect_exit 0 '^↓ 1 cell fell to 0 where f64 is not 0$' -- "$T" run tests/golden/half/overflow_f16.json --steps weights
expect_exit 0 'max \|error\| vs f64 = 0\.000123333' -- "$T" run "$P" --dtype f16 --steps weights
# The exercise topic: its file passes check in f16, and its answer states the overflow.
"$T" exercise --topic precision --seed 3 --format json > "$work/exercise.json"
expect_exit 0 "^1 passed, 0 failed$" -- "$T" check "$work/exercise.json"
expect_exit 0 "Without the max shift, f16's first inf is at exp" -- "$T" exercise --topic precision --seed 3 --format text
finish
