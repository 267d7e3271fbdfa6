# `run` as a person and a script see it: --help and --version, the text table,
# filters, standard input, colour only when asked, the JSON contract.
source "$SOURCE_DIR/tests/cli/lib.sh"
T=$ATTN_TRACE
E="$SOURCE_DIR/examples"

expect_exit 0 "Usage:.*SUBCOMMAND" -- "$T" --help
expect_exit 0 "attn-trace [0-9]+\.[0-9]+" -- "$T" --version
expect_exit 0 "Examples:" -- "$T" run --help
expect_exit 0 "Examples:" -- "$T" check --help
expect_exit 0 "Examples:" -- "$T" random --help

# The text trace: header line "name  formula  shape", token labels, -inf and exact 0.
expect_exit 0 "scores  S = Q Kᵀ  \(3, 3\)  head 0" -- "$T" run "$E/damaged_on_arrival.json"
expect_exit 0 "damaged +1\.0000 +0 +0" -- "$T" run "$E/damaged_on_arrival.json" --mask causal --steps weights
expect_exit 0 "damaged +0 +-inf +-inf" -- "$T" run "$E/damaged_on_arrival.json" --mask causal --steps mask
expect_exit 0 "0\.12421" -- "$T" run "$E/damaged_on_arrival.json" --steps weights --precision 5
# No colour when not a terminal, colour when asked.
out=$("$T" run "$E/damaged_on_arrival.json" --steps weights)
checks=$((checks + 1)); if grep -q $'\x1b' <<<"$out"; then echo "FAIL: colour written to a pipe"; failures=$((failures + 1)); fi
expect_exit 0 $'\x1b\\[' -- "$T" run "$E/damaged_on_arrival.json" --steps weights --color always
# Large matrices are summarised unless --full.
"$T" random --n 40 --dk 2 --seed 3 -o big.json
expect_exit 0 "…" -- "$T" run big.json --steps weights
full=$("$T" run big.json --steps weights --full | grep -c "…")
checks=$((checks + 1)); if [ "$full" != 0 ]; then echo "FAIL: --full still summarises"; failures=$((failures + 1)); fi
# Standard input, and the JSON contract.
expect_exit 0 '"attn_trace":1' -- bash -c "echo '{\"Q\": [[1, 0]], \"K\": [[1, 0], [0, 1]], \"V\": [[1, 2], [3, 4]]}' | \"$T\" run - --format json"
expect_exit 0 '"name":"weights","head":0,"symbol":"A","formula":"[^"]*","shape":\[3,3\],"data":\[\[1\.0,0\.0,0\.0\]' -- "$T" run "$E/damaged_on_arrival.json" --mask causal --format json --steps weights
expect_exit 0 '"-inf"' -- "$T" run "$E/damaged_on_arrival.json" --mask causal --format json --steps masked

# random: the same seed gives the same file; --literal writes numbers that load to the same problem.
"$T" random --n 3 --dk 2 --seed 5 -o a.json && "$T" random --n 3 --dk 2 --seed 5 -o b.json
expect_exit 0 "" -- cmp a.json b.json
"$T" random --n 3 --dk 2 --seed 5 --literal -o literal.json
"$T" run a.json --format json > from_spec.json && "$T" run literal.json --format json > from_literal.json
expect_exit 0 "" -- bash -c "diff <(sed 's/\"title\":\"[^\"]*\"//' from_spec.json) <(sed 's/\"title\":\"[^\"]*\"//' from_literal.json)"
expect_exit 2 "must divide" -- "$T" random --heads 3 --kv-heads 2
# --d-model: normal projections with std 1/√d_model (0.25 for 16), in the spec and in --literal alike.
expect_exit 0 '"W_Q": \{"random":\{"dist":"normal","seed":3,"shape":\[16,2\],"std":0.25\}\}' -- "$T" random --n 3 --d-model 16 --seed 2
"$T" random --n 3 --d-model 16 --seed 2 -o dm.json && "$T" random --n 3 --d-model 16 --seed 2 --literal -o dm_literal.json
"$T" run dm.json --format json > dm_spec.out && "$T" run dm_literal.json --format json > dm_literal.out
expect_exit 0 "" -- cmp dm_spec.out dm_literal.out
expect_exit 1 "" -- bash -c "\"$T\" random --n 3 --d-model 16 --dist integers | grep -q std"  # integers stay hand-friendly

# check: golden traces, failures reported with the cell, exit codes.
"$T" run "$E/damaged_on_arrival.json" --format json > golden.json
expect_exit 0 "1 passed, 0 failed" -- "$T" check "$E/damaged_on_arrival.json" --golden golden.json
sed 's/0\.7275703441891866/0.7/' golden.json > wrong.json
expect_exit 1 "weights \(head 0\): 1 of 9 values differ.*1 passed, 0 failed|0 passed, 1 failed" -- "$T" check "$E/damaged_on_arrival.json" --golden wrong.json
# A golden records its settings whole (mask_spec, dropout) and check applies them: a golden
# made with --mask causal --scale 0.5 passes against its own problem, and says so; an
# option replaces one, named on a line before the closing line (docs/COMMANDS.md#check).
"$T" run "$E/damaged_on_arrival.json" --mask causal --scale 0.5 --format json > causal_golden.json
expect_exit 0 '"mask_spec":"causal","dropout":null' -- cat causal_golden.json
expect_exit 0 "^note: the golden's settings: mask causal, scale 0.5, empty_rows error, dropout none, dtype f64$" -- "$T" check "$E/damaged_on_arrival.json" --golden causal_golden.json
expect_exit 0 "^1 passed, 0 failed$" -- "$T" check "$E/damaged_on_arrival.json" --golden causal_golden.json
expect_exit 1 "^note: --mask none replaces the golden's mask causal$" -- "$T" check "$E/damaged_on_arrival.json" --golden causal_golden.json --mask none
expect_exit 1 "^0 passed, 1 failed$" -- "$T" check "$E/damaged_on_arrival.json" --golden causal_golden.json --mask none
"$T" run "$E/damaged_on_arrival.json" --mask '{"window": 2}' --format json > window_golden.json
expect_exit 0 '"mask_spec":\{"window":2\}' -- cat window_golden.json
expect_exit 0 "^1 passed, 0 failed$" -- "$T" check "$E/damaged_on_arrival.json" --golden window_golden.json
"$T" run "$E/dropout_train.json" --format json > dropout_golden.json
expect_exit 0 '"dropout":\{"p":0.5,"seed":[0-9]+,"mode":"train"\}' -- cat dropout_golden.json
expect_exit 0 "^1 passed, 0 failed$" -- "$T" check "$E/dropout_train.json" --golden dropout_golden.json
# A golden written before the settings were recorded: the file's apply, with a note.
sed 's/,"mask_spec":"causal","dropout":null//' causal_golden.json > old_golden.json
expect_exit 1 "^note: the golden records no settings" -- "$T" check "$E/damaged_on_arrival.json" --golden old_golden.json
expect_exit 2 "give them with --golden" -- "$T" check "$E/damaged_on_arrival.json" --mask causal
sed 's/"data": \[\[0.5, 0.75, 3.0\]/"data": [[0.5, 0.75, 3.5]/' "$E/damaged_on_arrival.json" > off.json
expect_exit 1 "\[0, 2\] expected 3\.5, got 3, difference -0\.5" -- "$T" check off.json
expect_exit 1 "^1 passed, 1 failed$" -- "$T" check "$E/damaged_on_arrival.json" off.json
# issue 11, finding 8: a changed mask differs by an infinity, not by "max error 0"
# (the golden's own mask applies unless --mask replaces it)
"$T" run "$E/damaged_on_arrival.json" --mask causal --format json > causal.json
expect_exit 1 "mask \(head 0\): 3 of 9 values differ \(max error inf at \[0, 1\]: expected -inf, got 0;" -- "$T" check "$E/damaged_on_arrival.json" --golden causal.json --mask none
# a malformed golden trace is exit 2 naming the path, not an abort
sed 's/"command":"run"/"command":5/' golden.json > command5.json
expect_exit 2 "command5.json: .\.command: expected a string" -- "$T" check "$E/damaged_on_arrival.json" --golden command5.json
sed 's/"name":"x",/"name":"x","tile":5,/' golden.json > tile5.json
expect_exit 2 "tile5.json: .\.steps\[0\]\.tile: expected \[query block, key tile\]" -- "$T" check "$E/damaged_on_arrival.json" --golden tile5.json
# issue 11, finding 11: random --literal writes one row per line, not one number per line
"$T" random --n 3 --dk 2 --literal > literal.json
expect_exit 0 "^9$" -- grep -c '^   \[.*,.*\],\?$' literal.json
expect_exit 0 "^18 literal.json$" -- wc -l literal.json
printf '{"Q": [[1]], "K": [[1]], "V": [[1]]}' > nothing.json
expect_exit 2 "nothing to check" -- "$T" check nothing.json
finish
