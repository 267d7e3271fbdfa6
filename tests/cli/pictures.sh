# decode's and tiled's --heatmap and --svg (issue 30): the pictures put their
# weights together whole, and they equal run's weights of the same problem
# (docs/COMMANDS.md#options-shared-by-run-decode-and-tiled). Each check failed on
# the main of 2026-12-03, where both options stopped with exit 2.
source "$SOURCE_DIR/tests/cli/lib.sh"
A=$ATTN_TRACE
E=$SOURCE_DIR/examples/damaged_on_arrival.json
G=$SOURCE_DIR/examples/gqa_8q_2kv.json

# The SVG's cells as "row → key: value" lines, one per cell, from their <title>s.
titles() { grep -o '<title>[^<]*</title>' "$1" | sed 's/<title>//; s/<\/title>//'; }
same() {  # same WHAT FILE_A FILE_B: the two SVGs' cells are the same
  checks=$((checks + 1))
  if ! diff <(titles "$2") <(titles "$3") > /dev/null; then
    fail "$1: the cells differ"
    diff <(titles "$2") <(titles "$3") | head -8 | sed 's/^/    /'
  fi
}
cells() {  # cells WHAT FILE COUNT
  checks=$((checks + 1))
  local got
  got=$(titles "$2" | wc -l)
  [ "$got" = "$3" ] || fail "$1: $got cells, expected $3"
}

# decode is causal: its stacked weights rows are run's weights with the causal mask.
expect_exit 0 "^weights  head 0  \(3, 3\)" -- "$A" decode "$E" --heatmap --color never
expect_exit 0 "" -- diff <("$A" decode "$E" --heatmap --color never) <("$A" run "$E" --mask causal --heatmap --color never)
expect_exit 0 "" -- diff <("$A" decode "$E" --prefill 2 --heatmap --color never) <("$A" run "$E" --mask causal --heatmap --color never)
# --svg prints decode's one line per step as well, and writes 3 × 3 cells, 3 masked.
expect_exit 0 "^decode steps: t, cache length" -- "$A" decode "$E" --svg decode.svg
"$A" run "$E" --mask causal --svg run-causal.svg > /dev/null
cells "decode.svg" decode.svg 9
expect_exit 0 "" -- grep -c ': masked</title>' decode.svg
[ "$(grep -c ': masked</title>' decode.svg)" = 3 ] || fail "decode.svg: $(grep -c ': masked</title>' decode.svg) masked cells, expected 3"
same "decode.svg against run --mask causal" decode.svg run-causal.svg
# GQA, 8 query heads: one panel each, 8 × (4 × 4) cells, as run's causal-bottom-right weights.
"$A" decode "$G" --svg decode-gqa.svg > /dev/null
"$A" run "$G" --mask causal-bottom-right --svg run-gqa.svg > /dev/null
[ "$(grep -c '<g transform' decode-gqa.svg)" = 8 ] || fail "decode-gqa.svg: $(grep -c '<g transform' decode-gqa.svg) panels, expected 8"
cells "decode-gqa.svg" decode-gqa.svg "$(titles run-gqa.svg | wc -l)"
same "decode --svg of GQA against run" decode-gqa.svg run-gqa.svg
"$A" decode "$G" --head 5 --svg head5.svg > /dev/null
"$A" run "$G" --mask causal-bottom-right --head 5 --svg run-head5.svg > /dev/null
same "decode --head 5 --svg" head5.svg run-head5.svg

# tiled: the final weights exp(S − m) / ℓ, from its tiles, are run's weights, with
# skipped tiles (causal, 1 × 2 tiles) masked.
expect_exit 0 "" -- diff <("$A" tiled "$E" --heatmap --color never) <("$A" run "$E" --heatmap --color never)
expect_exit 0 "" -- diff <("$A" tiled "$E" --mask causal --block-q 1 --block-k 2 --heatmap --color never) <("$A" run "$E" --mask causal --heatmap --color never)
expect_exit 0 "max_abs_diff_vs_full" -- "$A" tiled "$E" --mask causal --block-q 1 --block-k 2 --svg tiled.svg
cells "tiled.svg" tiled.svg 9
same "tiled --svg against run" tiled.svg run-causal.svg
"$A" tiled "$G" --block-q 3 --block-k 2 --svg tiled-gqa.svg > /dev/null
"$A" run "$G" --svg run-gqa-free.svg > /dev/null
same "tiled --svg of GQA against run" tiled-gqa.svg run-gqa-free.svg
# In full: the numbers of the SVG's titles at 15 decimals agree with run's to 1e-15.
"$A" tiled "$E" --mask causal --block-q 2 --block-k 2 --precision 15 --svg tiled15.svg > /dev/null
"$A" run "$E" --mask causal --precision 15 --svg run15.svg > /dev/null
expect_exit 0 "^9 cells agree$" -- python3 -c '
import re, sys
read = lambda path: [t.split(": ")[-1] for t in re.findall(r"<title>([^<]*)</title>", open(path).read())]
a, b = read(sys.argv[1]), read(sys.argv[2])
assert len(a) == len(b) == 9, (len(a), len(b))
for x, y in zip(a, b):
    assert (x == y == "masked") or abs(float(x) - float(y)) <= 1e-15, (x, y)
print(len(a), "cells agree")' tiled15.svg run15.svg

# What the pictures cannot draw is still an error, exit 2.
expect_exit 2 "--heatmap draws one per-head step of the full trace: .*found --steps m" -- "$A" tiled "$E" --heatmap --steps m
expect_exit 2 "--svg draws one per-head step of the full trace: .*found --steps out" -- "$A" decode "$E" --steps out --svg x.svg

finish
