# What learners type (docs/PROBLEM.md#masks-written-the-wrong-way-round): each input as a
# learner wrote it, and the hint that names the likely mistake: in a note where it is
# computed, in the error where it is refused (exit 2).
source "$SOURCE_DIR/tests/cli/lib.sh"
T=$ATTN_TRACE
qkv='"Q": [[1, 0], [0, 1], [1, 1]], "K": [[1, 0], [0, 1], [1, 1]], "V": [[1, 2], [3, 4], [5, 6]]'

# A 0/1 mask given as additive: computed (it is a bias of 1), the mix-up named in a note.
echo "{$qkv, \"mask\": {\"additive\": [[0, 1, 1], [0, 0, 1], [0, 0, 0]]}}" > additive01.json
expect_exit 0 "^note: the additive mask at \\\$\.mask holds only 0s and 1s: added to the scores, a 1 raises a score by 1 and hides no key\..*bool-polarity pitfall" -- "$T" run additive01.json
# ...and nothing blocked: every weight of row 0 is above 0, as a bias leaves it.
expect_exit 0 "^0  0\.1977  0\.2650  0\.5374$" -- "$T" run additive01.json --steps weights
# The same note in the JSON, and a real additive mask (0 and -inf) has none.
expect_exit 0 '"notes":\["the additive mask at \$\.mask holds only 0s and 1s' -- "$T" run additive01.json --format json
echo "{$qkv, \"mask\": {\"additive\": [[0, \"-inf\", \"-inf\"], [0, 0, \"-inf\"], [0, 0, 0]]}}" > additive_inf.json
expect_exit 0 "" -- bash -c "! \"$T\" run additive_inf.json | grep -q 'holds only 0s and 1s'"

# An allowed mask of the wrong polarity: refused (query 2 reads no key), its other polarity
# exactly causal, named; with empty_rows zero it is computed, and the note says the same.
echo "{$qkv, \"mask\": {\"allowed\": [[0, 1, 1], [0, 0, 1], [0, 0, 0]]}}" > allowed_wrong.json
expect_exit 2 "query 2 can read no key: every key is masked, so its softmax is 0/0\. The allowed mask at \\\$\.mask leaves query 2 no key, and read the other way round, as \{\"blocked\": …\}, it is exactly the causal mask: in an allowed mask 1 \(true\) means may read\. Is it the other polarity\? The bool-polarity pitfall" -- "$T" run allowed_wrong.json
expect_exit 0 "^note: the allowed mask at \\\$\.mask leaves query 2 no key" -- "$T" run allowed_wrong.json --empty-rows zero
# A blocked mask whose other polarity leaves every query a key, but is not causal.
echo "{$qkv, \"mask\": {\"blocked\": [[1, 1, 1], [0, 1, 0], [1, 0, 1]]}}" > blocked_wrong.json
expect_exit 2 "The blocked mask at \\\$\.mask leaves query 0 no key, while read the other way round, as \{\"allowed\": …\}, it leaves every query a key: in a blocked mask 1 \(true\) means may not read" -- "$T" run blocked_wrong.json
# The right polarity: no note.
echo "{$qkv, \"mask\": {\"blocked\": [[0, 1, 1], [0, 0, 1], [0, 0, 0]]}}" > blocked_right.json
expect_exit 0 "" -- bash -c "! \"$T\" run blocked_right.json | grep -q 'polarity'"

# A bare matrix where a mask goes: the forms it could have meant.
echo "{$qkv, \"mask\": [[0, 1, 1], [0, 0, 1], [0, 0, 0]]}" > bare.json
expect_exit 2 "\\\$\.mask: a bare matrix is not a mask: say what its numbers mean, \{\"additive\": \[\[…\]\]\} .*\{\"allowed\": \[\[…\]\]\} .*\{\"blocked\": \[\[…\]\]\} .*found an array of 3 items of 0s and 1s: allowed or blocked, most likely" -- "$T" run bare.json

# Python's json.dumps(float("-inf")) writes -Infinity: refused with the spellings JSON takes.
python3 -c "import json; json.dump({'Q': [[1.0]], 'K': [[1.0], [2.0]], 'V': [[1.0], [2.0]], 'mask': {'additive': [[0.0, float('-inf')]]}}, open('dumps.json', 'w'))"
expect_exit 2 "malformed JSON at line 1, column [0-9]+: .*JSON has no -Infinity, Infinity or NaN \(Python's json\.dumps writes them\): write the strings \"-inf\", \"inf\" and \"nan\"" -- "$T" run dumps.json
python3 -c "import json; json.dump({'Q': [[float('nan')]], 'K': [[1.0]], 'V': [[1.0]]}, open('nan.json', 'w'))"
expect_exit 2 "write the strings \"-inf\", \"inf\" and \"nan\"" -- "$T" run nan.json
# "−inf" with a Unicode minus (U+2212, as pasted from a PDF) is -inf.
printf '{"Q": [[1]], "K": [[1], [2]], "V": [[1], [2]], "mask": {"additive": [[0, "\xe2\x88\x92inf"]]}}' > uminus.json
expect_exit 0 "^0  0  -inf$" -- "$T" run uminus.json --steps mask
finish
