# Bad input from the command line: exit code 2 and a message naming the file,
# the JSON path, what was expected and what was found. Never a crash.
source "$SOURCE_DIR/tests/cli/lib.sh"
T=$ATTN_TRACE
good='"Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[1], [2]]'

expect_bad_input '{"Q": [[1, 2],' 'malformed JSON at line 1'
# A key given twice in one object is refused at its object's path, not settled by the last one.
expect_bad_input "{$good, \"scale\": 0.5, \"scale\": 2}" '\$: the key "scale" is given twice in one object'
expect_bad_input "{$good, \"expect\": [{\"step\": \"out\", \"data\": [[1], [2]]}, {\"step\": \"out\", \"data\": 1, \"data\": 2}]}" \
  '\$\.expect\[1\]: the key "data" is given twice'
expect_bad_input "{$good, \"mask\": {\"lengths\": [[1]], \"window\": {\"left\": 1, \"left\": 2}}}" '\$\.mask\.window: the key "left" is given twice'
expect_bad_input '{"Q": [[1, 2], [3]], "K": [[1, 2]], "V": [[1]]}' '\$\.Q\[1\]: ragged array'
expect_bad_input '{"Q": [[1, "two"]], "K": [[1, 2]], "V": [[1]]}' '\$\.Q\[0\]\[1\]: expected a number'
expect_bad_input '{"Q": [], "K": [[1, 2]], "V": [[1]]}' '\$\.Q: expected a non-empty array'
expect_bad_input '{"Q": [[1, 2, 3]], "K": [[1, 2]], "V": [[1]]}' '\$\.K: queries have d_k = 3 so keys need 3 columns, found 2'
expect_bad_input '{"X": [[1, 0, 0, 1], [0, 1, 0, 0], [0, 0, 1, 0]], "W_Q": [[1, 0], [0, 1], [1, 1]], "W_K": [[1], [0], [0], [0]], "W_V": [[1], [0], [0], [0]]}' \
  '\$\.W_Q: X is \(3, 4\) so W_Q needs 4 rows, found 3'
expect_bad_input "{$good, \"mask\": \"casual\"}" "\\\$\\.mask: unknown mask 'casual'"
expect_bad_input "{$good, \"mask\": {\"allowed\": [[true]]}}" '\$\.mask: the scores are \(2, 2\)'
expect_bad_input "{$good, \"scael\": 2}" 'unknown key "scael" \(did you mean "scale"\?\)'
expect_bad_input "{$good, \"mask\": \"padding:0,0\"}" 'query 0 can read no key'

# Files and options.
expect_exit 2 "missing.json: cannot open" -- "$T" run missing.json
mkdir -p folder  # read as an empty file, it was "malformed JSON at line 1"
expect_exit 2 "^attn-trace: error: folder: is a folder, not a problem file" -- "$T" run folder
printf '{%s}' "$good" > good.json
expect_exit 2 "--mask: unknown mask 'diagonal'" -- "$T" run good.json --mask diagonal
expect_exit 2 "--mask padding:1: .*needs 2 values, found 1" -- "$T" run good.json --mask padding:1
expect_exit 2 "--scale: expected \"auto\", \"none\" or a finite number" -- "$T" run good.json --scale big
expect_exit 2 "--empty-rows" -- "$T" run good.json --empty-rows maybe
expect_exit 2 "--steps: unknown step 'wieghts'" -- "$T" run good.json --steps wieghts
expect_exit 2 "--head 3: the problem has 1 head" -- "$T" run good.json --head 3
expect_exit 2 "format" -- "$T" run good.json --format yaml

# Usage errors, CLI11's included, are one line in the one form, and a misspelling of a
# closed set's word names the nearest one (docs/COMMANDS.md#exit-codes).
expect_exit 2 "^attn-trace: error: --mask: unknown mask 'casual' \(did you mean 'causal'\?\)" -- "$T" run good.json --mask casual
expect_exit 2 "^attn-trace: error: --mask: mask 'window' needs its width: window:W" -- "$T" run good.json --mask window
expect_exit 2 "objects: window, chunked, key_valid, additive, allowed, blocked, sparse\)" -- "$T" run good.json --mask diagonal
expect_exit 2 "^attn-trace: error: --steps: unknown step 'weigths' \(did you mean 'weights'\?\)" -- "$T" run good.json --steps weigths
expect_exit 2 "^attn-trace: error: --format 'jsn' \(did you mean 'json'\?\): expected one of text, json" -- "$T" run good.json --format jsn
expect_exit 2 "^attn-trace: error: unknown option '--bogus'\$" -- "$T" run good.json --bogus
expect_exit 2 "^Usage: attn-trace run \[OPTIONS\] PROBLEM \(attn-trace run --help lists the options\)\$" -- "$T" run good.json --bogus
expect_exit 2 "^attn-trace: error: unknown option '--mak' \(did you mean '--mask'\?\)" -- "$T" run good.json --mak causal
expect_exit 2 "^attn-trace: error: unexpected argument 'more.json'" -- "$T" run good.json more.json
expect_exit 2 "^attn-trace: error: PROBLEM is required\$" -- "$T" run
expect_exit 2 "^attn-trace: error: unknown command 'frobnicate': expected one of run, decode" -- "$T" frobnicate
expect_exit 2 "^attn-trace: error: unknown command 'rn' \(did you mean 'run'\?\)" -- "$T" rn good.json
expect_exit 2 "^attn-trace: error: name a command: run, decode" -- "$T"
expect_exit 2 "^attn-trace: error: ⟦cell⟧|--cell 'weigths\[0,1\]': cannot explain step 'weigths' \(did you mean 'weights'\?\)" -- "$T" explain good.json --cell 'weigths[0,1]'
# explain lists only the steps it explains: not grad --row's jacobian, nor the tiled backward's lse.
expect_exit 2 "cannot explain step 'jacobian' this way: --cell explains x, .*grad_x_source$" -- "$T" explain good.json --cell 'jacobian[0,0]'
expect_exit 2 "cannot explain step 'lse' this way" -- "$T" explain good.json --cell 'lse[0,0]'
expect_exit 2 "^attn-trace: error: --topic 'softmx' \(did you mean 'softmax'\?\)" -- "$T" exercise --topic softmx
expect_exit 3 "--backend cuda: (this build has no CUDA backend|no usable CUDA device|no CUDA device)" -- "$T" run good.json --backend cuda
expect_exit 3 "--backend cuda: " -- "$T" run good.json --fast --backend cuda
expect_exit 3 "--backend cuda: " -- "$T" tiled good.json --backend cuda
expect_exit 2 "expected cpu or cuda" -- "$T" run good.json --backend tpu
# An option that counts refuses a negative value: CLI11 read -1 into it as 2^64 − 1 (a
# seed run refused, no memory limit at all, a vector of 2^64 entries: exit 4).
for args in "run good.json --max-memory -5" "grad good.json --max-output -1" "variance --keys -1" "variance --seed -1" "bench --seed -1" \
            "random --d-model -3" "random --n -1" "exercise --seed -1"; do
  option=$(echo "$args" | grep -o -- '--[a-z-]* -[0-9]*' | cut -d' ' -f1)
  # shellcheck disable=SC2086
  expect_exit 2 "^attn-trace: error: $option '-[0-9]*': expected a whole number \(this option takes no negative value\)" -- "$T" $args
done
expect_exit 2 "^attn-trace: error: --n 0: expected a whole number of at least 1" -- "$T" random --n 0
# random refuses a mask run would refuse, rather than write a file that cannot be run.
expect_exit 2 "^attn-trace: error: --mask \{\"blocked\": \[\[0,1\]\]\}: .*the blocked mask must be \(4, 4\), found \(1, 2\)" -- "$T" random --n 4 --mask '{"blocked": [[0,1]]}'
expect_exit 2 "the padding mask needs 4 values, found 2" -- "$T" random --n 4 --mask '{"key_valid": [1,0]}'
expect_exit 2 "^attn-trace: error: --kv-heads '-1': expected a whole number from 1 to 4096$" -- "$T" random --n 2 --kv-heads -1
expect_exit 2 "^attn-trace: error: --seed '9223372036854775804': expected a whole number from 0 to 9223372036854775803$" -- "$T" random --seed 9223372036854775804
# A value of the wrong kind says what the option takes (CLI11 said "Could not convert", and
# wrote DBL_MAX out in 309 digits as a range's end).
expect_exit 2 "^attn-trace: error: --head 'x': expected a whole number$" -- "$T" run good.json --head x
expect_exit 2 "^attn-trace: error: --samples '1.5': expected a whole number$" -- "$T" variance --samples 1.5
# ... and a number past 2^64 − 1, which CLI11 capped at it (a seed of 18446744073709551615).
expect_exit 2 "^attn-trace: error: --seed '99999999999999999999': expected a whole number of at most 18446744073709551615$" -- "$T" variance --seed 99999999999999999999
expect_exit 2 "^attn-trace: error: --n '99999999999999999999999': expected a whole number of at most 18446744073709551615$" -- "$T" random --n 99999999999999999999999
expect_exit 2 "^attn-trace: error: --n '10,x': expected a whole number \(or several, comma-separated\)$" -- "$T" cost --n 10,x --d-model 8
expect_exit 2 "^attn-trace: error: --atol 'x': expected a number of at least 0$" -- "$T" check good.json --atol x
expect_exit 2 "^attn-trace: error: --precision '40': expected a whole number from 0 to 17$" -- "$T" run good.json --precision 40
# The largest seed random writes is one run reads, exactly: seeds past 2^53 are not rounded.
"$T" random --n 3 --m 4 --d-model 2 --dk 2 --seed 9223372036854775803 -o big_seed.json
expect_exit 0 '"seed":9223372036854775807' -- cat big_seed.json
expect_exit 0 "^out " -- "$T" run big_seed.json --steps out --color never
"$T" random --n 3 --dk 2 --seed 9007199254740993 --literal -o exact.json
sed 's/9007199254740993/9007199254740992/' <("$T" random --n 3 --dk 2 --seed 9007199254740993) > rounded.json
expect_exit 0 "" -- cmp <("$T" run <("$T" random --n 3 --dk 2 --seed 9007199254740993) --steps q --format csv) <("$T" run exact.json --steps q --format csv)
expect_exit 1 "" -- cmp -s <("$T" run rounded.json --steps q --format csv) <("$T" run exact.json --steps q --format csv)
expect_exit 2 '\$\.Q\.random\.seed: expected a whole number from 0 to 9223372036854775807, found 9223372036854775808' -- "$T" run <(echo '{"Q": {"random": {"shape": [2, 2], "seed": 9223372036854775808}}, "K": [[1, 0]], "V": [[1, 0]]}')
finish
