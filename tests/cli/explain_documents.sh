# explain's LaTeX compiles and stays inside the margins, and its Markdown keeps
# the maths intact through a CommonMark renderer, for every kind of step.
source "$SOURCE_DIR/tests/cli/lib.sh"
A=$ATTN_TRACE
E=$SOURCE_DIR/examples/damaged_on_arrival.json
G=$SOURCE_DIR/examples/gqa_8q_2kv.json
R=$SOURCE_DIR/tests/golden/rope_half.json
M=$SOURCE_DIR/tests/golden/mha_causal.json
S=$SOURCE_DIR/tests/golden/softcap.json
L=$SOURCE_DIR/tests/golden/alibi.json
C=$SOURCE_DIR/examples/cross_attention.json
require_document_tools
"$A" random --n 16 --dk 4 --seed 3 --mask causal -o keys16.json
"$A" random --n 6 --dk 64 --d-model 8 --seed 5 -o wide.json
"$A" random --n 40 --dk 2 --seed 7 -o keys40.json

# One explanation per line: the problem, then the explain options.
cat > cases.txt <<CASES
$E --cell scores[0,2]
$E --cell weights[0,2]
$E --row weights[1] --mask causal
$E --row out[0]
$E --cell x[0,1]
$E --cell q[1,0]
$E --cell k[2,1]
$E --cell v[0,1]
$E --cell scaled[2,1]
$E --cell mask[0,2] --mask causal
$E --cell masked[0,2] --mask causal
$E --cell row_max[1,0]
$E --cell exp[1,1]
$E --cell row_sum[0,0]
$E --cell out[0,1]
$E --cell k_cache[1,0] --t 2
$E --cell masked[0,1] --t 2
$E --cell weights[0,1] --t 2
$E --cell out[0,1] --t 1
$E --cell masked[1,2] --t 2 --prefill 3
$E --cell masked[0,1] --tile 1,0
$E --cell m[0,0] --tile 0,1
$E --cell rescale[0,0] --tile 0,1
$E --cell l[0,0] --tile 1,1
$E --cell u[0,1] --tile 0,1
$G --cell weights[1,3] --head 5
$G --cell scores[2,1] --head 5
$R --cell q_rot[1,1]
$R --cell k_rot[2,2]
$R --cell scores[1,2]
$M --cell concat[1,5]
$M --cell final[1,0]
$S --cell capped[0,1]
$L --cell mask[3,0] --head 1
$E --cell grad_W_Q[1,0] --mask causal
$E --cell grad_q[1,0] --mask causal
$E --cell grad_k[2,1] --mask causal
$E --cell grad_v[0,1] --mask causal
$E --cell grad_weights[1,0] --mask causal
$E --cell grad_scores[1,0] --mask causal
$M --cell grad_W_O[1,0]
$M --cell grad_concat[1,5]
$M --cell grad_b_O[0,1]
$C --cell grad_W_K[0,0]
$C --cell grad_W_V[0,1]
keys16.json --row weights[15]
keys16.json --row out[15]
keys16.json --cell weights[15,3]
keys16.json --cell out[15,1]
keys16.json --cell row_sum[15,0]
keys16.json --cell l[1,0] --tile 3,3 --block-q 4 --block-k 4
keys16.json --cell u[1,1] --tile 3,3 --block-q 4 --block-k 4
keys40.json --row weights[3]
keys40.json --row out[39]
keys40.json --cell row_max[2,0]
keys40.json --cell u[0,0] --tile 0,1 --block-q 2 --block-k 20
wide.json --cell scores[5,3]
wide.json --cell q[2,63]
wide.json --cell weights[0,3] --t 5
CASES

while read -r problem args; do
  checks=$((checks + 1))
  # shellcheck disable=SC2086
  if ! "$A" explain "$problem" $args --format latex > body.tex 2> error.txt; then
    echo "FAIL: explain $(basename "$problem") $args --format latex: $(cat error.txt)"
    failures=$((failures + 1))
    continue
  fi
  { latex_preamble; cat body.tex; echo '\end{document}'; } > doc.tex
  check_latex doc
  checks=$((checks + 1))
  # shellcheck disable=SC2086
  "$A" explain "$problem" $args --format markdown --math github > body.md
  check_markdown body
  # With --math github (the default, $…$, is read by pandoc in tests/cli/latex_boxes.sh)
  # the maths arrives as a code block GitHub renders as maths: subscripts' underscores
  # and braces untouched, no emphasis made of them.
  if ! grep -q 'class="language-math"' body.html || ! grep -q '_{' body.html || grep -q '<em>[^<]*</em>[^<]*</code>' body.html; then
    echo "FAIL: the Markdown of $(basename "$problem") $args lost its maths:"
    head -20 body.html | sed 's/^/    /'
    failures=$((failures + 1))
  fi
done < cases.txt
finish
