# Every exercise topic × seeds 0–9 as a document a student can use: the JSON passes
# `check`, the givens are printed whole (no "…") in Markdown and text, the LaTeX of
# a topic's ten seeds compiles with pdflatex without running far past the margin,
# and the Markdown renders with cmark-gfm keeping labels such as <pad> as text.
source "$SOURCE_DIR/tests/cli/lib.sh"
A=$ATTN_TRACE

# The tools are part of the test: without them it would pass while checking nothing.
for tool in pdflatex cmark-gfm; do
  command -v "$tool" > /dev/null || { echo "FAIL: $tool is missing (tools/setup.sh installs texlive-latex-base and cmark-gfm)"; exit 1; }
done

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# The givens: from the "Given:" line up to the "Compute:" line.
givens() { sed -n '/^Given:$/,/^Compute:$/p' "$1"; }

# Overfull boxes wider than 20pt (text visibly running into the margin) in LOG, each
# as "WIDTHpt: the start of the offending line of TEX", at most three.
overfull() {
  grep -Eo 'Overfull \\hbox \(([0-9.]+)pt too wide\) (detected at line|in paragraph at lines) [0-9]+' "$1" |
    awk '{ width = substr($3, 2) + 0; if (width > 20) print width, $NF }' | head -3 |
    while read -r width line; do echo "    ${width}pt: $(sed -n "${line}p" "$2" | cut -c1-100)"; done
}

# The topics as the tool lists them (an unknown topic's message), so a new topic is tested too.
topics=$("$A" exercise --topic '?' 2>&1 | sed -n 's/.*expected one of //p' | tr -d ',')
for topic in $topics; do
  {
    printf '%s\n' '\documentclass{article}' '\usepackage{amsmath}' '\begin{document}'
  } > "$topic.tex"
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
    cmark-gfm --extension table "$name.md" > "$name.html" || fail "$name: cmark-gfm exited $?"
    # cmark-gfm (like GitHub) drops what it reads as HTML: an unescaped <pad> is one.
    if grep -q "raw HTML omitted" "$name.html"; then
      fail "$name: part of the Markdown was read as HTML (an unescaped <...>):"
      grep -E '(^|[^\\])<[a-z]' "$name.md" | head -2 | sed 's/^/    /'
    fi
    if grep -q "pad" "$name.json"; then grep -q "&lt;pad&gt;" "$name.html" || fail "$name: <pad> is missing from the rendered Markdown"; fi

    checks=$((checks + 1))
    "$A" exercise --topic "$topic" --seed "$seed" --format text > "$name.txt" || fail "$name: text exited $?"
    ! givens "$name.txt" | grep -q "…" || fail "$name: a given matrix is summarised (…) in the text"

    "$A" exercise --topic "$topic" --seed "$seed" --format latex >> "$topic.tex" || fail "$name: latex exited $?"
    printf '%s\n' '\clearpage' >> "$topic.tex"
  done
  echo '\end{document}' >> "$topic.tex"

  checks=$((checks + 1))
  if ! pdflatex -interaction=nonstopmode -halt-on-error "$topic.tex" > /dev/null 2>&1; then
    fail "$topic: the LaTeX of seeds 0-9 does not compile"
    grep -A3 '^!' "$topic.log" | head -8 | sed 's/^/    /'
  elif [ -n "$(overfull "$topic.log" "$topic.tex")" ]; then
    fail "$topic: lines run past the right margin by more than 20pt:"
    overfull "$topic.log" "$topic.tex"
  fi
done

[ "$(wc -w <<<"$topics")" -ge 10 ] || fail "topics '$topics': the list from the tool's message was not read"
finish
