# The trace as a document (docs/COMMANDS.md#output-formats): the LaTeX of run, decode and tiled on
# every example and golden problem compiles with pdflatex in a plain article with
# amsmath, without lines running far into the margin, and has no raw Unicode (ℓ, ᵀ
# stopped pdflatex); the Markdown renders with cmark-gfm with nothing read as HTML.
# (Exercises: exercise_documents.sh; explain: explain_documents.sh.)
source "$SOURCE_DIR/tests/cli/lib.sh"
A=$ATTN_TRACE
require_document_tools

# document NAME COMMAND...: COMMAND's LaTeX and Markdown (--format is appended).
document() {
  local name=$1
  shift
  checks=$((checks + 1))
  { latex_preamble; "$@" --format latex || fail "$name: $* --format latex exited $?"; echo '\end{document}'; } > "$name.tex"
  if LC_ALL=C grep -q -P '[^\x00-\x7F]' "$name.tex"; then
    fail "$name: raw Unicode in the LaTeX:"
    LC_ALL=C grep -n -P '[^\x00-\x7F]' "$name.tex" | head -2 | cut -c1-100 | sed 's/^/    /'
  fi
  check_latex "$name"
  "$@" --format markdown > "$name.md" || fail "$name: $* --format markdown exited $?"
  check_markdown "$name"
}

for file in "$SOURCE_DIR"/examples/*.json "$SOURCE_DIR"/tests/golden/*.json; do
  name=$(basename "$file" .json)
  document "run_$name" "$A" run "$file"
done
E=$SOURCE_DIR/examples
document decode "$A" decode "$E/damaged_on_arrival_decode.json"
document decode_gqa "$A" decode "$E/gqa_8q_2kv.json" --head 1
document tiled "$A" tiled "$E/damaged_on_arrival_tiled.json"
document tiled_causal "$A" tiled "$E/damaged_on_arrival_tiled.json" --mask causal
document tiled_gqa "$A" tiled "$E/gqa_8q_2kv.json" --block-q 3 --block-k 4
document tiled_rope "$A" tiled "$SOURCE_DIR/tests/golden/rope_half.json"
document grad "$A" grad "$E/damaged_on_arrival.json" --mask causal --row 1
document grad_rope "$A" grad "$SOURCE_DIR/tests/golden/grad_rope.json"
document grad_dropout "$A" grad "$SOURCE_DIR/tests/golden/grad_dropout.json"
# real-valued numbers, not hand-friendly ones: wide cells and long rows must still fit the page
"$A" random --n 40 --d-model 64 --heads 4 --kv-heads 2 --mask causal -o wide.json > /dev/null
document wide_scores "$A" run wide.json --full --steps scores --head 3
document wide_decode "$A" decode wide.json --steps weights --head 1
document wide_precision "$A" run wide.json --steps q,weights --precision 8 --head 0
explain_document() {
  local name=$1
  shift
  { latex_preamble; "$@" --format latex || fail "$name: $* exited $?"; echo '\end{document}'; } > "$name.tex"
  check_latex "$name"
}
explain_document explain_wide_row "$A" explain wide.json --row 'weights[39]' --head 3
explain_document explain_wide_q "$A" explain wide.json --cell 'q[39,7]' --precision 6
explain_document explain_wide_out "$A" explain wide.json --row 'out[39]' --head 2 --precision 6
# a token label in another script and LaTeX's special characters still compile
printf '%s' '{"tokens": ["naïve", "<pad>", "50%_&_#"], "Q": [[1, 0], [0, 1], [1, 1]], "K": [[1, 0], [0, 1], [1, 1]], "V": [[1], [2], [3]]}' > labels.json
document labels "$A" run labels.json
expect_exit 0 "&lt;pad&gt;" -- cat labels.html

# issue 11, finding 10: the project's own docs refer to nothing a user does not have
for doc in "$SOURCE_DIR/README.md" "$SOURCE_DIR"/docs/*.md; do
  checks=$((checks + 1))
  grep -nE 'SP[E]C( §|\.md)|the SP[E]C|seed 00[0-9]|§[0-9]' "$doc" > refs.txt
  [ ! -s refs.txt ] || { fail "$(basename "$doc") refers to a text users do not have:"; head -3 refs.txt | sed 's/^/    /'; }
done
for command in run decode tiled permute grad explain check exercise cost variance bench random; do
  checks=$((checks + 1))
  ! "$A" "$command" --help | grep -nE 'SP[E]C( §|\.md)|the SP[E]C|seed 00[0-9]|§[0-9]' || fail "$command --help refers to a text users do not have"
done

finish
