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

# Every matrix a task reads is given, a member's too (docs/COMMANDS.md#exercise): mla's
# tasks read W_DKV, W_UK and W_UV, which the problem file holds under "mla".
for key in W_DKV W_UK W_UV; do
  expect_exit 0 "^$key  given \(mla\.$key\)" -- "$A" exercise --topic mla --seed 0 --part questions --format text
  expect_exit 0 "^### \`$key\` given" -- "$A" exercise --topic mla --seed 0 --part questions --format markdown
  expect_exit 0 "mathrm\{W\\\\_${key#W_}\} = \\\\begin\{bmatrix\}" -- "$A" exercise --topic mla --seed 0 --part questions --format latex
  expect_exit 0 "<code>$key</code> <span class=\"formula\">given" -- "$A" exercise --topic mla --seed 0 --part questions --format html
done
# A sheet starts with its heading, as the docs' transcript does; a second exercise still
# stands apart from the first by a blank line.
for format in text markdown; do
  checks=$((checks + 1))
  first=$("$A" exercise --topic causal --seed 1 --format "$format" | head -1)
  [[ "$first" =~ ^(# )?Exercise\ 1:\  ]] || fail "exercise --format $format starts with '$first', not its heading"
done
expect_exit 0 $'\n\n(# )?Exercise 2: ' -- "$A" exercise --topic causal --count 2 --format text
checks=$((checks + 1))
"$A" exercise --topic causal --count 2 --format markdown | grep -B1 -x "# Exercise 2: .*" | head -1 | grep -qx "" || fail "exercise 2 of a sheet does not follow a blank line"
# The precision answer answers tasks 1 and 3 with the numbers.
expect_exit 0 "^Yes, every scaled score is exact in f16" -- "$A" exercise --topic precision --seed 0 --format text
expect_exit 0 "^Without the max shift, e\^z passes 65504 and f16 stores inf for 6 of the 6 scores: z = 17 \(please reading please\), 12\.5" -- "$A" exercise --topic precision --seed 0 --format text
# LaTeX: 3.4·10³⁸ as 10^{38}, closed before its bracket; α of tiled's l and u; the mask's words as text.
expect_exit 0 'about \$3\.4\\cdot 10\^\{38\}\$\)\.' -- "$A" exercise --topic precision --seed 0 --format latex
for format in markdown latex; do
  expect_exit 0 '\\alpha \\ell _\{\\mathrm\{old\}\}' -- "$A" tiled "$SOURCE_DIR/examples/damaged_on_arrival.json" --format "$format" --steps l,u
  expect_exit 0 '\\alpha u_\{\\mathrm\{old\}\}' -- "$A" exercise --topic tiled --format "$format"
done
expect_exit 0 '^### `mask` \$M = 0\$ where a query may read a key, \$-\\infty\$ where it may not \(3, 3\)' -- "$A" run "$SOURCE_DIR/examples/damaged_on_arrival.json" --mask causal --format markdown --steps mask
expect_exit 0 '\$M\$ = \$0\$ where a query may read a key, \$-\\infty \$ where it may not, shape' -- "$A" run "$SOURCE_DIR/examples/damaged_on_arrival.json" --mask causal --format latex --steps mask
expect_exit 0 '\(scaled \$\\mathrm\{scores\}\+\\mathrm\{mask\}\$; \$-\\infty \$ = a key this query may not read\)' -- "$A" exercise --topic causal --format latex
for topic in causal padding sparse; do
  checks=$((checks + 1))
  ! "$A" exercise --topic "$topic" --format latex | grep -q 'mathrm{where}' || fail "exercise --topic $topic: a word of the mask's formula set as maths"
done

# variance: small and fast here; the figures are tested in test_variance.cpp
expect_exit 0 "^ +16 +1[0-9]\.[0-9]+ +[01]\.[0-9]+" -- "$A" variance --dk 4,16 --samples 2000 --queries 200
expect_exit 0 '"d_k": 8' -- "$A" variance --dk 8 --samples 500 --queries 50 --format json
# Its JSON starts as every command's does, and parses.
expect_exit 0 '^\{"attn_trace": 1, "command": "variance", "samples": 500, "queries": 50, "keys": 32, "seed": 0, "rows": \[' -- "$A" variance --dk 8 --samples 500 --queries 50 --format json
"$A" variance --dk 8,16 --samples 500 --queries 50 --format json > variance.json
expect_exit 0 "^2 8 16$" -- python3 -c "import json; d = json.load(open('variance.json')); print(len(d['rows']), *(r['d_k'] for r in d['rows']))"
expect_exit 0 "" -- "$A" variance --dk 4,16,64 --samples 500 --queries 50 --svg chart.svg
if command -v python3 > /dev/null; then
  expect_exit 0 "" -- python3 -c "import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])" chart.svg
fi
expect_exit 2 "at least 1" -- "$A" variance --dk 0,4
expect_exit 2 "at least 2 pairs" -- "$A" variance --samples 1
expect_exit 2 "" -- "$A" variance --dk four

finish
