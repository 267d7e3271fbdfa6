# Helpers for the CLI tests: each tests/cli/*.sh is one CTest test, run with
# $ATTN_TRACE (the binary) and $SOURCE_DIR (the repository) set, in a temp dir.
set -u
failures=0
checks=0

# expect_exit CODE PATTERN -- COMMAND...
# Runs COMMAND; passes when it exits with CODE and its stdout+stderr matches the
# extended regular expression PATTERN ("" matches anything).
expect_exit() {
  local want=$1 pattern=$2
  shift 3
  local output status
  output=$("$@" 2>&1)
  status=$?
  checks=$((checks + 1))
  if [ "$status" != "$want" ]; then
    echo "FAIL: $* exited $status, expected $want"
    echo "$output" | head -20 | sed 's/^/    /'
    failures=$((failures + 1))
  elif [ -n "$pattern" ] && ! grep -Eq -- "$pattern" <<<"$output"; then
    echo "FAIL: $* output does not match /$pattern/"
    echo "$output" | head -20 | sed 's/^/    /'
    failures=$((failures + 1))
  fi
}

# expect_bad_input FILE_CONTENT PATTERN: writes the JSON to a file, runs
# `attn-trace run` on it, expects exit 2 and an error naming the file and PATTERN.
expect_bad_input() {
  local content=$1 pattern=$2
  printf '%s' "$content" > bad.json
  expect_exit 2 "attn-trace: error: bad.json: .*$pattern" -- "$ATTN_TRACE" run bad.json
}

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# The documents tests compile LaTeX and render Markdown: without the tools they
# would pass while checking nothing, so a missing tool fails them.
require_document_tools() {
  for tool in pdflatex cmark-gfm; do
    command -v "$tool" > /dev/null || { echo "FAIL: $tool is missing (tools/setup.sh installs texlive-latex-base and cmark-gfm)"; exit 1; }
  done
}

# The plain document every LaTeX output must compile in (docs/COMMANDS.md#output-formats).
latex_preamble() { printf '%s\n' '\documentclass{article}' '\usepackage{amsmath}' '\begin{document}'; }

# Overfull boxes wider than 20pt (text visibly running into the margin) in LOG, each
# as "WIDTHpt: the start of the offending line of TEX", at most three.
overfull() {
  grep -Eo 'Overfull \\hbox \(([0-9.]+)pt too wide\) (detected at line|in paragraph at lines) [0-9]+' "$1" |
    awk '{ width = substr($3, 2) + 0; if (width > 20) print width, $NF }' | head -3 |
    while read -r width line; do echo "    ${width}pt: $(sed -n "${line}p" "$2" | cut -c1-100)"; done
}

# check_latex NAME: NAME.tex (a whole document) compiles with pdflatex and no line
# runs more than 20pt past the right margin.
check_latex() {
  checks=$((checks + 1))
  if ! pdflatex -interaction=nonstopmode -halt-on-error "$1.tex" > /dev/null 2>&1; then
    fail "$1: the LaTeX does not compile"
    grep -A3 '^!' "$1.log" | head -8 | sed 's/^/    /'
  elif [ -n "$(overfull "$1.log" "$1.tex")" ]; then
    fail "$1: lines run past the right margin by more than 20pt:"
    overfull "$1.log" "$1.tex"
  fi
}

# check_markdown NAME: NAME.md renders with cmark-gfm and nothing in it is read as
# HTML and dropped (an unescaped <pad> would vanish, as on GitHub).
check_markdown() {
  checks=$((checks + 1))
  cmark-gfm --extension table "$1.md" > "$1.html" || { fail "$1: cmark-gfm exited $?"; return; }
  if grep -q "raw HTML omitted" "$1.html"; then
    fail "$1: part of the Markdown was read as HTML (an unescaped <...>):"
    grep -E '(^|[^\\])<[a-z]' "$1.md" | head -2 | sed 's/^/    /'
  fi
}

finish() {
  echo "$((checks - failures)) passed, $failures failed"
  [ "$failures" = 0 ]
}
