# A mask option over a model directory's problem (docs/PROBLEM.md#masks): it replaces the
# file's mask and always combines with the model's own (causal, its window), in every
# command alike: run, decode, tiled, grad, explain and check --golden. Every problem of
# tests/models/ × none, causal, window:2 and a JSON list: never an internal error (exit 4),
# and the header names the model's masks first. grad refuses some families with a reason
# (MLA, qk-norm: exit 2; the fused backward's masks and softcap: exit 3), never 4.
source "$SOURCE_DIR/tests/cli/lib.sh"
T=$ATTN_TRACE
work=$PWD  # the test's own temp dir, for what it writes
cd "$SOURCE_DIR"

masks=(none causal window:2 '["causal", {"window": {"left": 1, "right": 0}}]')
for problem in tests/models/*/problem.json; do
  # Problems read through "checkpoint": {"model": …} carry the model's masks; the others
  # (the family route, torch-mha) only the file's.
  model=$("$T" run "$problem" --format json --steps out | python3 -c 'import json, sys; m = json.load(sys.stdin)["problem"].get("model"); print(m["model_type"] if m else "")')
  for mask in "${masks[@]}"; do
    for command in run decode tiled; do
      if [ "$command/$model" = decode/bert ]; then  # an encoder: every query reads every key
        expect_exit 2 "a bert layer lets every query read every key, .*decode traces decoders" -- "$T" $command "$problem" --mask "$mask" --steps out
        continue
      fi
      expect_exit 0 "" -- "$T" $command "$problem" --mask "$mask" --steps out
    done
    for grad in --fast --tiled ""; do
      checks=$((checks + 1))
      # shellcheck disable=SC2086  # an empty $grad is no option
      "$T" grad "$problem" $grad --mask "$mask" --steps grad_q > /dev/null 2> "$work/grad.err"
      status=$?
      [ "$status" = 0 ] || { { [ "$status" = 2 ] || [ "$status" = 3 ]; } && grep -q "grad does not\|cannot run this fused" "$work/grad.err"; } ||
        fail "grad $grad $problem --mask $mask exited $status: $(cat "$work/grad.err")"
    done
    expect_exit 0 "weights\[0\]" -- "$T" explain "$problem" --row weights[0] --mask "$mask"
    "$T" run "$problem" --mask "$mask" --format json > "$work/golden.json"
    expect_exit 0 "passed" -- "$T" check "$problem" --golden "$work/golden.json" --mask "$mask"
  done
  # --mask none keeps the model's own masks: causal first (BERT's encoder has none).
  case $model in
    "") ;;
    bert) expect_exit 0 "mask = none," -- "$T" run "$problem" --mask none --steps out ;;
    *) expect_exit 0 "mask = causal[ ,]" -- "$T" run "$problem" --mask none --steps out ;;
  esac
done

# The window of a sliding-window model survives --mask none: the weights of query 6 are
# exactly 0 outside keys 4..6 (window 3).
expect_exit 0 "mask = causal \+ window:3," -- "$T" run tests/models/mistral_window/problem.json --mask none --steps out
"$T" run tests/models/mistral_window/problem.json --mask none --format json --steps weights |
  python3 -c '
import json, sys
steps = json.load(sys.stdin)["steps"]
for step in steps:
    row = step["data"][6]
    assert all(v == 0 for v in row[:4]) and all(v > 0 for v in row[4:]), row
' || fail "mistral_window --mask none: weights outside the window are not exactly 0"
checks=$((checks + 1))

# check --golden --mask means what run --mask means: a golden made with --mask causal
# passes against --mask causal (the model's masks kept on both sides), and fails against none.
"$T" run tests/models/mistral_window/problem.json --mask window:1 --format json > "$work/window1.json"
expect_exit 0 "passed" -- "$T" check tests/models/mistral_window/problem.json --golden "$work/window1.json"
expect_exit 1 "" -- "$T" check tests/models/mistral_window/problem.json --golden "$work/window1.json" --mask none
finish
