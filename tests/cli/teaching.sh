# explain, the worksheet formats, pictures, pitfalls, exercises and variance from the command line.
source "$SOURCE_DIR/tests/cli/lib.sh"
A=$ATTN_TRACE
E=$SOURCE_DIR/examples/damaged_on_arrival.json
G=$SOURCE_DIR/examples/gqa_8q_2kv.json

# explain: the numbers of "damaged on arrival" (examples/), 0-based indices
expect_exit 0 "S_02 = q_0 · k_2 = 0.5 × 0 \+ 1.5 × 2 = 0 \+ 3 = 3" -- "$A" explain "$E" --cell 'scores[0,2]'
expect_exit 0 "A_02 = .* = 1 / 1.3744 = 0.7276" -- "$A" explain "$E" --cell 'weights[0,2]'
expect_exit 0 "A_10 = 1 / 2 = 0.5" -- "$A" explain "$E" --row 'weights[1]' --mask causal
expect_exit 0 "\(0.2484, 0.7276\)$" -- "$A" explain "$E" --row 'out[0]'
expect_exit 0 '^S_\{02\} = q_\{0\}' -- "$A" explain "$E" --cell 'scores[0,2]' --format markdown
expect_exit 0 '\\frac\{1\}\{2\}' -- "$A" explain "$E" --row 'weights[1]' --mask causal --format latex
expect_exit 0 "head 5" -- "$A" explain "$G" --cell 'weights[1,3]' --head 5
expect_exit 0 "0-based" -- "$A" explain --help
# explain: every error path is exit 2 with a message that says what is wrong
expect_exit 2 "expected STEP\[i,j\]" -- "$A" explain "$E" --cell 'scores[0]'
expect_exit 2 "expected STEP\[i,j\]" -- "$A" explain "$E" --cell 'scores(0,1)'
expect_exit 2 "cannot explain step 'keys'" -- "$A" explain "$E" --cell 'keys[0,1]'
expect_exit 2 "cannot explain step 'scores'" -- "$A" explain "$E" --row 'scores[0]'
expect_exit 2 "row 3 is out of range" -- "$A" explain "$E" --cell 'scores[3,0]'
expect_exit 2 "column 7 is out of range" -- "$A" explain "$E" --cell 'weights[0,7]'
expect_exit 2 "row 9 is out of range" -- "$A" explain "$E" --row 'out[9]'
expect_exit 2 "--head 8: the problem has 8 heads" -- "$A" explain "$G" --row 'out[0]' --head 8
expect_exit 2 "needs one --cell" -- "$A" explain "$E"
expect_exit 2 "excludes" -- "$A" explain "$E" --cell 'scores[0,0]' --row 'out[0]'
expect_exit 2 "format" -- "$A" explain "$E" --cell 'scores[0,0]' --format json

# run: Markdown, LaTeX, CSV
expect_exit 0 "\| \*\*damaged\*\* \| 0.1242 \| 0.1482 \| 0.7276 \|" -- "$A" run "$E" --format markdown --steps weights
expect_exit 0 "begin\{array\}\{r\|rrrr\}" -- "$A" run "$E" --format latex
expect_exit 0 "^damaged,0.124206" -- "$A" run "$E" --format csv --steps weights
expect_exit 2 "csv writes one matrix, but 2 steps" -- "$A" run "$E" --format csv --steps weights,out
expect_exit 2 "csv writes one matrix, but 8 steps" -- "$A" run "$G" --format csv --steps weights
expect_exit 0 "^the,0\." -- "$A" run "$G" --format csv --steps weights --head 3

# pictures
expect_exit 0 "×" -- "$A" run "$E" --heatmap --mask causal --color never
expect_exit 0 $'\x1b\\[48;5;' -- "$A" run "$E" --heatmap --color always
expect_exit 2 "--heatmap draws in the terminal" -- "$A" run "$E" --heatmap --format json
expect_exit 0 "" -- "$A" run "$G" --svg heads.svg
expect_exit 0 "" -- grep -c "<g transform" heads.svg
[ "$(grep -c '<g transform' heads.svg)" = 8 ] || { echo "FAIL: heads.svg should have 8 panels"; failures=$((failures + 1)); }
if command -v python3 > /dev/null; then
  expect_exit 0 "" -- python3 -c "import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])" heads.svg
fi
expect_exit 2 "cannot write" -- "$A" run "$E" --svg /nonexistent/dir/w.svg
expect_exit 2 "--batch 3: the problem has 1 sequence" -- "$A" run "$E" --batch 3

# pitfalls: "damaged on arrival"'s wrong numbers next to the right ones
expect_exit 0 "damaged   0.4159  0.2920   0.2920" -- "$A" run "$E" --mask causal --pitfall zero-scores
expect_exit 0 "damaged  0  0.8308" -- "$A" run "$E" --mask causal --pitfall bool-polarity
expect_exit 0 "row sums: 0.1242, 0.6667, 1" -- "$A" run "$E" --mask causal --pitfall mask-after-softmax
expect_exit 0 "why it is wrong" -- "$A" run "$E" --pitfall column-softmax
expect_exit 0 "0.8421" -- "$A" run "$E" --pitfall no-scale
expect_exit 2 "no key is masked" -- "$A" run "$E" --pitfall zero-scores
expect_exit 2 "pitfall" -- "$A" run "$E" --pitfall softmax-twice
expect_exit 2 "side by side as text" -- "$A" run "$E" --mask causal --pitfall zero-scores --format json

# exercises: every topic's JSON passes check; same seed, same exercise
for topic in scores softmax causal padding multihead gqa kv-cache tiled scale cost; do
  "$A" exercise --topic "$topic" --seed 4 --format json > "exercise_$topic.json"
  expect_exit 0 "^1 passed, 0 failed$" -- "$A" check "exercise_$topic.json"
done
expect_exit 0 "## Answer" -- "$A" exercise --topic softmax --seed 3
expect_exit 0 "begin\{enumerate\}" -- "$A" exercise --topic causal --seed 3 --format latex
expect_exit 0 "^Answer$" -- "$A" exercise --topic gqa --seed 0 --format text
expect_exit 0 "format text" -- "$A" exercise --help
"$A" exercise --topic gqa --seed 9 > a.md
"$A" exercise --topic gqa --seed 9 > b.md
expect_exit 0 "" -- cmp a.md b.md
expect_exit 2 "--topic 'attention'" -- "$A" exercise --topic attention --seed 1
expect_exit 2 "format" -- "$A" exercise --topic scores --format csv
expect_exit 2 "" -- "$A" exercise --seed 1

# variance: small and fast here; the figures are tested in test_variance.cpp
expect_exit 0 "^ +16 +1[0-9]\.[0-9]+ +[01]\.[0-9]+" -- "$A" variance --dk 4,16 --samples 2000 --queries 200
expect_exit 0 '"d_k": 8' -- "$A" variance --dk 8 --samples 500 --queries 50 --format json
expect_exit 0 "" -- "$A" variance --dk 4,16,64 --samples 500 --queries 50 --svg chart.svg
if command -v python3 > /dev/null; then
  expect_exit 0 "" -- python3 -c "import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])" chart.svg
fi
expect_exit 2 "at least 1" -- "$A" variance --dk 0,4
expect_exit 2 "at least 2 pairs" -- "$A" variance --samples 1
expect_exit 2 "" -- "$A" variance --dk four

finish
