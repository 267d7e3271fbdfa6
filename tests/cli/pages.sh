# --format html from the command line: every command that takes it writes a page,
# and the requests a page cannot meet are exit 2 with the reason. What the pages do
# in a browser: tests/cli/browser.sh.
source "$SOURCE_DIR/tests/cli/lib.sh"
A=$ATTN_TRACE
E=$SOURCE_DIR/examples/damaged_on_arrival.json
G=$SOURCE_DIR/examples/gqa_8q_2kv.json

for command in run decode tiled grad; do
  expect_exit 0 "^<!doctype html>" -- "$A" "$command" "$E" --format html
done
# grad --tiled keeps no grad_scores: its cells that read it say so instead of being explained.
expect_exit 0 "^<!doctype html>" -- "$A" grad "$E" --mask causal --tiled --format html
expect_exit 0 "^<!doctype html>" -- "$A" run "$E" --fast --format html
expect_exit 0 "^<!doctype html>" -- "$A" permute "$E" --perm 2,0,1 --format html
expect_exit 0 "<pre class=\"math\">" -- "$A" explain "$E" --cell 'weights[2,1]' --format html
expect_exit 0 "<summary>Show the answer to task 1</summary>" -- "$A" exercise --topic softmax --seed 3 --format html
# The page's explanations follow --head, --t's decode options and tiled's blocks.
expect_exit 0 "weights\[1,3\], head 5" -- "$A" run "$G" --head 5 --steps weights --format html
expect_exit 0 "of tile \[2,1\]" -- "$A" tiled "$E" --block-q 1 --block-k 2 --steps m --format html
expect_exit 0 "weights\[0,1\] at decode step t = 3, head 3" -- "$A" decode "$G" --prefill 2 --head 3 --steps weights --format html
# A page past the explained size says so instead.
"$A" random --n 70 --dk 4 --seed 1 -o big.json
expect_exit 0 "explains its cells while its steps hold at most 4096 numbers" -- "$A" run big.json --format html
# What a page cannot do: exit 2, saying why.
expect_exit 2 "--pitfall prints the two computations side by side as text" -- "$A" run "$E" --mask causal --pitfall zero-scores --format html
expect_exit 2 "--heatmap draws in the terminal: leave out --format html" -- "$A" run "$E" --heatmap --format html
expect_exit 2 "html\).*--max-output" -- "$A" run big.json --format html --full --max-output 100K
# The explanations count: the page is measured whole before it is printed.
expect_exit 2 "page would be .* with its cells' explanations; the limit is 100 KiB \(--max-output\)" -- "$A" run "$G" --format html --max-output 100K
expect_exit 2 "--steps grad_q: this run trace has no 'grad_q' step" -- "$A" run "$E" --steps grad_q --format html

finish
