# LaTeX that fits the page and Markdown maths that renders (docs/COMMANDS.md#output-formats,
# docs/COMMANDS.md#markdown-maths): at the default settings the LaTeX of every exercise
# topic, of run on every example, of decode, of explain and of a 30-key matrix with --full compiles
# with pdflatex and no overfull box at all (documents.sh allows 20pt; here 0pt), every
# block of a split matrix carries its columns' labels, and the docs' LaTeX example
# compiles; the Markdown's maths is read as maths by pandoc, in both --math styles.
source "$SOURCE_DIR/tests/cli/lib.sh"
A=$ATTN_TRACE
E=$SOURCE_DIR/examples
require_document_tools
for tool in pdftotext pandoc; do
  command -v "$tool" > /dev/null || { echo "FAIL: $tool is missing (tools/setup.sh installs poppler-utils and pandoc)"; exit 1; }
done

# no_overfull NAME: NAME.tex compiles and its log has no overfull box, each one named.
no_overfull() {
  checks=$((checks + 1))
  if ! pdflatex -interaction=nonstopmode -halt-on-error "$1.tex" > /dev/null 2>&1; then
    fail "$1: the LaTeX does not compile"
    grep -A3 '^!' "$1.log" | head -8 | sed 's/^/    /'
  elif grep -q 'Overfull \\hbox' "$1.log"; then
    fail "$1: $(grep -c 'Overfull \\hbox' "$1.log") overfull boxes:"
    grep -Eo 'Overfull \\hbox \([0-9.]+pt too wide\) (detected at line|in paragraph at lines) [0-9]+' "$1.log" | head -3 |
      while read -r _ _ width _ _ _ _ line; do echo "    ${width#(} at: $(sed -n "${line}p" "$1.tex" | cut -c1-100)"; done
  fi
}

# latex_document NAME COMMAND...: COMMAND's LaTeX (--format latex appended) in a plain article.
latex_document() {
  local name=$1
  shift
  { latex_preamble; "$@" --format latex || fail "$name: $* exited $?"; echo '\end{document}'; } > "$name.tex"
  no_overfull "$name"
}

# Every topic as the tool lists them, three seeds each on one document.
topics=$("$A" exercise --topic '?' 2>&1 | sed -n 's/.*expected one of //p' | tr -d ',')
[ "$(wc -w <<<"$topics")" -ge 15 ] || fail "topics '$topics': the list from the tool's message was not read"
for topic in $topics; do
  latex_preamble > "exercise_$topic.tex"
  for seed in 0 1 2; do
    "$A" exercise --topic "$topic" --seed "$seed" --format latex >> "exercise_$topic.tex" || fail "$topic $seed: exited $?"
    echo '\clearpage' >> "exercise_$topic.tex"
  done
  echo '\end{document}' >> "exercise_$topic.tex"
  no_overfull "exercise_$topic"
  # What a teacher hands out: a sheet of three as questions, and its key.
  for part in questions answers; do
    latex_document "sheet_${topic}_$part" "$A" exercise --topic "$topic" --seed 0 --count 3 --part "$part"
  done
done

for file in "$E"/*.json; do latex_document "run_$(basename "$file" .json)" "$A" run "$file"; done
latex_document grad "$A" grad "$E/damaged_on_arrival.json" --row 1
latex_document grad_dropout "$A" grad "$SOURCE_DIR/tests/golden/grad_dropout.json"
latex_document explain_weights "$A" explain "$E/damaged_on_arrival.json" --row 'weights[2]'
latex_document explain_out "$A" explain "$E/damaged_on_arrival.json" --row 'out[1]'
latex_document explain_gqa "$A" explain "$E/gqa_8q_2kv.json" --cell 'weights[1,3]' --head 5
# Prose with a long word that cannot be broken (docs/COMMANDS.md#output-formats): decode's note
# ends in max_abs_diff_vs_full, grad_k's heading in grad_scores, and mla_small's heading
# quotes its tokens; each ran into the margin before the prose was set in a sloppypar.
latex_document decode "$A" decode "$E/damaged_on_arrival.json"
latex_document explain_masked "$A" explain "$E/damaged_on_arrival.json" --cell 'weights[1,2]' --mask causal
latex_document explain_grad_k "$A" explain "$E/damaged_on_arrival.json" --cell 'grad_k[1,0]' --mask causal
latex_document explain_grad_w "$A" explain "$E/damaged_on_arrival.json" --cell 'grad_W_Q[1,0]' --mask causal
latex_document explain_mla "$A" explain "$E/mla_small.json" --cell 'weights[1,1]'

# 3 queries against 30 keys labelled with 12 characters (wide letters, so the estimate of
# their width is tested): --full splits the scores into blocks, each with its keys' labels.
keys=() rows=()
for k in $(seq 0 29); do keys+=("\"Wmkeys$(printf '%06d' "$k")\""); rows+=("[$((k % 3)), $((k % 5 - 2))]"); done
labels=$(IFS=,; echo "${keys[*]}")
matrix=$(IFS=,; echo "${rows[*]}")
printf '{"tokens": ["first", "second", "third"], "source_tokens": [%s], "Q": [[1, 0], [0, 1], [1, 1]], "K": [%s], "V": [%s]}' \
  "$labels" "$matrix" "$matrix" > keys30.json
latex_document keys30 "$A" run keys30.json --full --steps scores
latex_document keys30_summary "$A" run keys30.json
latex_document keys30_row "$A" explain keys30.json --row 'weights[2]'
checks=$((checks + 1))
pdftotext keys30.pdf keys30.txt
for k in $(seq 0 29); do
  grep -q "Wmkeys$(printf '%06d' "$k")" keys30.txt || fail "keys30: the label of key $k is missing from the PDF's text"
done
# The blocks are headed with the columns they hold, none a lone column left over.
expect_exit 0 "columns 0–3 of 30:" -- cat keys30.txt
expect_exit 1 "" -- grep -E "column [0-9]+ of 30" keys30.txt

# The docs' LaTeX example, with run's output where it says to paste it.
sed -n '/^```latex$/,/^```$/p' "$SOURCE_DIR/docs/COMMANDS.md" | sed '1d;$d' > docs_example.tex
"$A" run "$E/damaged_on_arrival.json" --format latex > run_output.tex
sed -i 's|^% paste or \\input the output of:.*|\\input{run_output}|' docs_example.tex
expect_exit 0 "input\{run_output\}" -- cat docs_example.tex
no_overfull docs_example

# Markdown maths: pandoc reads the default dollars as maths; --math github writes GitHub's forms.
"$A" explain "$E/damaged_on_arrival.json" --row 'weights[2]' --format markdown > explain.md
expect_exit 0 '^\$\$$' -- cat explain.md
expect_exit 0 'class="math display"' -- pandoc -f markdown -t html explain.md
"$A" run "$E/damaged_on_arrival.json" --format markdown --steps scores > run.md
expect_exit 0 'class="math inline"' -- pandoc -f markdown -t html run.md
"$A" exercise --topic softmax --seed 1 > exercise.md
expect_exit 0 'class="math display"' -- pandoc -f markdown -t html exercise.md
expect_exit 0 '^```math$' -- "$A" explain "$E/damaged_on_arrival.json" --row 'weights[2]' --format markdown --math github
expect_exit 1 '' -- grep -q '^\$\$' <("$A" explain "$E/damaged_on_arrival.json" --row 'weights[2]' --format markdown --math github)
expect_exit 0 '^### `scores` \$`S = Q\\,K\^\{\\top\}`\$ \(3, 3\)' -- "$A" run "$E/damaged_on_arrival.json" --format markdown --steps scores --math github
expect_exit 0 '^```math$' -- "$A" exercise --topic softmax --seed 1 --math github
# A bad value names the nearest; --math with another format would change nothing.
expect_exit 2 "attn-trace: error: --math 'dollar' \(did you mean 'dollars'\?\): expected one of dollars, github" -- "$A" run "$E/damaged_on_arrival.json" --format markdown --math dollar
expect_exit 2 "attn-trace: error: --math github sets how Markdown writes maths: it needs --format markdown, not latex" -- "$A" explain "$E/damaged_on_arrival.json" --row 'weights[2]' --format latex --math github
expect_exit 2 "it needs --format markdown, not text" -- "$A" run "$E/damaged_on_arrival.json" --math dollars
expect_exit 2 "it needs --format markdown, not json" -- "$A" exercise --topic softmax --format json --math github

finish
