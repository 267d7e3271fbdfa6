# cmake --install into a temporary prefix (docs/COMMANDS.md#installing): the installed
# binary runs from there, its man page renders without warnings and covers every command,
# and the bash completion offers commands, options, topics and step names.
source "$SOURCE_DIR/tests/cli/lib.sh"
build=$(dirname "$ATTN_TRACE")
prefix=$PWD/prefix
expect_exit 0 "" -- cmake --install "$build" --prefix "$prefix"
B=$prefix/bin/attn-trace
expect_exit 0 "^attn-trace [0-9.]+$" -- "$B" --version
expect_exit 0 "^build: " -- "$B" --version
expect_exit 0 "^CPU kernel: .*compiled for avx512, avx2, baseline; this CPU runs" -- "$B" --version
expect_exit 0 "^CUDA: " -- "$B" --version
expect_exit 0 "^[0-9]+ passed, 0 failed$" -- "$B" check "$SOURCE_DIR"/examples/*.json

page=$prefix/share/man/man1/attn-trace.1
checks=$((checks + 1))
[ -f "$page" ] || fail "no man page at $page"
rendered=$(MANWIDTH=100 man -l "$page" 2>&1)
for command in $("$B" words commands); do
  checks=$((checks + 1))
  grep -Eq "^   $command$" <<<"$rendered" || fail "the man page has no section for $command"
done
expect_exit 0 "Examples:" -- man -l "$page"
# docs/, the contract, is installed beside the page, and the page names the folder.
docdir=$prefix/share/doc/attn-trace
for doc in "$SOURCE_DIR"/docs/*.md; do
  checks=$((checks + 1))
  cmp -s "$doc" "$docdir/$(basename "$doc")" || fail "docs/$(basename "$doc") is not installed in $docdir"
done
checks=$((checks + 1))
grep -qF "$docdir" <<<"$(MANWIDTH=200 man -l "$page" 2>&1)" || fail "the man page does not name $docdir"
checks=$((checks + 1))
grep -q "@ATTN_TRACE_DOCDIR@" "$page" && fail "the installed man page still holds the placeholder"
checks=$((checks + 1))
warnings=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
[ -z "$warnings" ] || fail "the man page has roff warnings: $warnings"

# The completion function, on a few words.
completion=$prefix/share/bash-completion/completions/attn-trace
complete_words() {  # complete_words WORD... : COMPREPLY for the last one
  COMP_WORDS=("$B" "$@")
  COMP_CWORD=$#
  COMPREPLY=()
  _attn_trace
  printf '%s\n' "${COMPREPLY[@]}"
}
source "$completion"
expect_exit 0 "^grad$" -- complete_words gr
expect_exit 0 "^--tiled$" -- complete_words grad x.json --til
expect_exit 2 "words options: no command 'nope'" -- "$B" words options nope
expect_exit 2 "words: expected commands, steps, topics, formats or options COMMAND" -- "$B" words colours
expect_exit 0 "^permutation$" -- complete_words exercise --topic perm
expect_exit 0 "^weights,grad_masked$" -- complete_words grad x.json --steps weights,grad_mas
expect_exit 0 "^markdown$" -- complete_words run x.json --format mark
expect_exit 0 "^naive,fast$" -- complete_words bench --impl naive,fa  # implementations, not file names
expect_exit 0 "^uniform$" -- complete_words random --dist uni
cd "$SOURCE_DIR/examples"
expect_exit 0 "^damaged_on_arrival_causal.json$" -- complete_words run damaged_on_arrival_ca
cd - > /dev/null
finish
