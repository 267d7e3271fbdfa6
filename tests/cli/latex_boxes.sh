# LaTeX that fits the page and Markdown maths that renders (docs/COMMANDS.md#output-formats,
# docs/COMMANDS.md#markdown-maths): every command that writes LaTeX writes, with --standalone,
# a document that pdflatex compiles with texlive-latex-base alone and with no overfull and no
# underfull box (documents.sh allows 20pt; here none at all): every example × run, explain,
# decode, tiled, grad, permute and precision, and every exercise topic at seeds 0–2, both
# parts. No page ends on a step's heading (it stays with its matrix); every block of a split
# matrix carries its columns' labels; the docs' LaTeX example compiles; the Markdown's maths
# is read as maths by pandoc, in both --math styles.
source "$SOURCE_DIR/tests/cli/lib.sh"
A=$ATTN_TRACE
E=$SOURCE_DIR/examples
require_document_tools
for tool in pdftotext pandoc; do
  command -v "$tool" > /dev/null || { echo "FAIL: $tool is missing (tools/setup.sh installs poppler-utils and pandoc)"; exit 1; }
done

# no_bad_boxes NAME: NAME.tex compiles and its log has no overfull and no underfull box, each one named.
no_bad_boxes() {
  checks=$((checks + 1))
  if ! pdflatex -interaction=nonstopmode -halt-on-error "$1.tex" > /dev/null 2>&1; then
    fail "$1: the LaTeX does not compile"
    grep -A3 '^!' "$1.log" | head -8 | sed 's/^/    /'
  elif grep -Eq '(Overfull|Underfull) \\[hv]box' "$1.log"; then
    fail "$1: $(grep -Ec '(Overfull|Underfull) \\[hv]box' "$1.log") bad boxes:"
    grep -Eo '(Overfull|Underfull) \\[hv]box \([^)]*\) (detected at line|in paragraph at lines|has occurred)[ 0-9-]*' "$1.log" | head -3 |
      while read -r kind box amount rest; do
        line=$(grep -Eo '[0-9]+' <<<"$rest" | head -1)
        echo "    $kind $box $amount at: $([ -n "$line" ] && sed -n "${line}p" "$1.tex" | cut -c1-100)"
      done
  fi
}

# standalone NAME COMMAND...: COMMAND's --format latex --standalone, as it is, when COMMAND
# takes the problem (exit 0); a problem it refuses (exit 2: decode of cross-attention) is skipped.
documents=0
standalone() {
  local name=$1 rc=0
  shift
  "$@" --format latex --standalone > "$name.tex" 2> "$name.err" || rc=$?
  if [ "$rc" = 2 ] && grep -q '^attn-trace: error: ' "$name.err"; then return; fi
  [ "$rc" = 0 ] || { fail "$name: $* exited $rc: $(head -c 300 "$name.err")"; return; }
  documents=$((documents + 1))
  grep -q '^\\documentclass{article}$' "$name.tex" || fail "$name: --standalone wrote no \\documentclass line"
  no_bad_boxes "$name"
}

for file in "$E"/*.json; do
  b=$(basename "$file" .json)
  standalone "run_$b" "$A" run "$file"
  standalone "explain_$b" "$A" explain "$file" --row 'weights[0]'
  standalone "decode_$b" "$A" decode "$file"
  standalone "tiled_$b" "$A" tiled "$file"
  standalone "grad_$b" "$A" grad "$file"
  standalone "permute_$b" "$A" permute "$file"
  standalone "precision_$b" "$A" precision "$file"
done
# Every topic as the tool lists them, three seeds, both parts, and a sheet of three and its key.
topics=$("$A" exercise --topic '?' 2>&1 | sed -n 's/.*expected one of //p' | tr -d ',')
[ "$(wc -w <<<"$topics")" -ge 15 ] || fail "topics '$topics': the list from the tool's message was not read"
for topic in $topics; do
  for seed in 0 1 2; do
    for part in questions answers; do standalone "exercise_${topic}_${seed}_$part" "$A" exercise --topic "$topic" --seed "$seed" --part "$part"; done
  done
  standalone "sheet_$topic" "$A" exercise --topic "$topic" --seed 0 --count 3
done
# 19 examples × 7 commands less the few each refuses, 16 topics × 7 documents.
echo "$documents standalone documents compiled"
[ "$documents" -ge 200 ] || fail "only $documents standalone documents were written"

standalone grad_dropout "$A" grad "$SOURCE_DIR/tests/golden/grad_dropout.json"
standalone explain_gqa "$A" explain "$E/gqa_8q_2kv.json" --cell 'weights[1,3]' --head 5
# Prose with a long word that cannot be broken (docs/COMMANDS.md#output-formats): decode's note
# ends in max_abs_diff_vs_full, grad_k's heading in grad_scores, and mla_small's heading
# quotes its tokens; each ran into the margin before the prose was set ragged right.
standalone explain_masked "$A" explain "$E/damaged_on_arrival.json" --cell 'weights[1,2]' --mask causal
standalone explain_grad_k "$A" explain "$E/damaged_on_arrival.json" --cell 'grad_k[1,0]' --mask causal
standalone explain_grad_w "$A" explain "$E/damaged_on_arrival.json" --cell 'grad_W_Q[1,0]' --mask causal
standalone explain_mla "$A" explain "$E/mla_small.json" --cell 'weights[1,1]'

# A heading stays with its matrix: no page of run's 8 heads (several pages) ends on a step's heading line.
checks=$((checks + 1))
pdftotext -layout run_gqa_8q_2kv.pdf run_gqa_8q_2kv.txt
pages=$(tr -cd '\f' < run_gqa_8q_2kv.txt | wc -c)
[ "$pages" -ge 3 ] || fail "run_gqa_8q_2kv: $pages pages; the test needs several"
awk 'BEGIN { RS = "\f" } { n = split($0, lines, "\n"); last = ""; for (k = n; k > 0; k--) if (lines[k] ~ /[^ ]/) { last = lines[k]; break }
     if (last ~ /shape \([0-9]+, [0-9]+\) *$/) print "page " NR ": " last }' run_gqa_8q_2kv.txt > orphans.txt
[ ! -s orphans.txt ] || fail "a page ends on a step's heading: $(head -2 orphans.txt)"

# --standalone with a format other than LaTeX is refused before anything runs.
expect_exit 2 "attn-trace: error: --standalone makes LaTeX a whole document: it needs --format latex, not text" -- "$A" run "$E/damaged_on_arrival.json" --standalone
expect_exit 2 "it needs --format latex, not markdown" -- "$A" exercise --topic softmax --standalone
expect_exit 2 "it needs --format latex, not text" -- "$A" explain "$E/damaged_on_arrival.json" --row 'weights[0]' --standalone
expect_exit 2 "it needs --format latex, not json" -- "$A" precision "$E/damaged_on_arrival.json" --format json --standalone

# 3 queries against 30 keys labelled with 12 characters (wide letters, so the estimate of
# their width is tested): --full splits the scores into blocks, each with its keys' labels.
keys=() rows=()
for k in $(seq 0 29); do keys+=("\"Wmkeys$(printf '%06d' "$k")\""); rows+=("[$((k % 3)), $((k % 5 - 2))]"); done
labels=$(IFS=,; echo "${keys[*]}")
matrix=$(IFS=,; echo "${rows[*]}")
printf '{"tokens": ["first", "second", "third"], "source_tokens": [%s], "Q": [[1, 0], [0, 1], [1, 1]], "K": [%s], "V": [%s]}' \
  "$labels" "$matrix" "$matrix" > keys30.json
standalone keys30 "$A" run keys30.json --full --steps scores
standalone keys30_summary "$A" run keys30.json
standalone keys30_row "$A" explain keys30.json --row 'weights[2]'
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
no_bad_boxes docs_example

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
