# Every exercise topic × seeds 0–9 as a document a student can use: the JSON passes
# `check`, the givens are printed whole (no "…") in Markdown and text, the LaTeX of
# a topic's ten seeds compiles with pdflatex without running far past the margin,
# and the Markdown renders with cmark-gfm keeping labels such as <pad> as text.
source "$SOURCE_DIR/tests/cli/lib.sh"
A=$ATTN_TRACE

require_document_tools

# The givens: from the "Given:" line up to the "Compute:" line.
givens() { sed -n '/^Given:$/,/^Compute:$/p' "$1"; }

# The topics as the tool lists them (an unknown topic's message), so a new topic is tested too.
topics=$("$A" exercise --topic '?' 2>&1 | sed -n 's/.*expected one of //p' | tr -d ',')
for topic in $topics; do
  latex_preamble > "$topic.tex"
  for seed in 0 1 2 3 4 5 6 7 8 9; do
    name="${topic}_$seed"
    checks=$((checks + 1))
    "$A" exercise --topic "$topic" --seed "$seed" --format json > "$name.json" || fail "$name: json exited $?"
    "$A" check "$name.json" > "$name.check" 2>&1
    grep -qx "1 passed, 0 failed" "$name.check" || { fail "$name: check does not pass its own answer"; head -5 "$name.check"; }

    checks=$((checks + 1))
    "$A" exercise --topic "$topic" --seed "$seed" > "$name.md" || fail "$name: markdown exited $?"
    givens "$name.md" | grep -q "^|" || fail "$name: no given tables in the Markdown"
    ! givens "$name.md" | grep -q "…" || fail "$name: a given matrix is summarised (…) in the Markdown"
    check_markdown "$name"
    if grep -q "pad" "$name.json"; then grep -q "&lt;pad&gt;" "$name.html" || fail "$name: <pad> is missing from the rendered Markdown"; fi

    checks=$((checks + 1))
    "$A" exercise --topic "$topic" --seed "$seed" --format text > "$name.txt" || fail "$name: text exited $?"
    ! givens "$name.txt" | grep -q "…" || fail "$name: a given matrix is summarised (…) in the text"

    "$A" exercise --topic "$topic" --seed "$seed" --format latex >> "$topic.tex" || fail "$name: latex exited $?"
    printf '%s\n' '\clearpage' >> "$topic.tex"
  done
  echo '\end{document}' >> "$topic.tex"

  check_latex "$topic"
done

[ "$(wc -w <<<"$topics")" -ge 10 ] || fail "topics '$topics': the list from the tool's message was not read"
# The permutation exercise writes its reordered outputs to 4 decimals, as its tables do.
expect_exit 0 "the outputs are \(1\.2119, 1\.7881\), \(1\.2119, 1\.7881\), \(0\.6584, 1\.5317\)" -- "$A" exercise --topic permutation --seed 1 --format text
# The kv-cache exercise states the per-token cache of a layer, H_kv · (d_k + d_v), on every seed.
for seed in 1 2 3 4 5 6; do
  expect_exit 0 "H_kv · \(d_k \+ d_v\) = [0-9]+ · \([0-9]+ \+ [0-9]+\) = [0-9,]+ numbers" -- "$A" exercise --topic kv-cache --seed "$seed" --format text
done
finish
