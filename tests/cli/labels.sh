# Token labels with unusual characters (docs/PROBLEM.md#labels-title-tokens-source_tokens):
# a newline, tab or other control character is refused when the problem is loaded, by
# every command and from a model directory's problem too; CJK and combining marks line up
# by terminal columns, whatever the locale; the text heatmap cuts a long column label
# with a visible "…" (docs/COMMANDS.md#options-shared-by-run-decode-and-tiled). Each
# check failed on the main of 2026-12-06: rows split, columns off, labels cut silently.
source "$SOURCE_DIR/tests/cli/lib.sh"
T=$ATTN_TRACE
qkv='"Q": [[1, 0], [0, 1], [1, 1]], "K": [[1, 0], [0, 1], [1, 1]], "V": [[1, 0], [0, 1], [1, 1]]'

# Refused, exit 2, naming the file, the label's path, what was expected and the character.
expect_bad_input "{\"tokens\": [\"a\\nb\", \"c\\td\", \"e\"], $qkv}" \
  '\$\.tokens\[0\]: expected a label without a newline, tab or other control character \(one would break the printed tables\), found "a\\nb", which holds U\+000A$'
expect_bad_input "{\"tokens\": [\"a\", \"c\\td\", \"e\"], $qkv}" '\$\.tokens\[1\]: .*found "c\\td", which holds U\+0009$'
expect_bad_input "{\"tokens\": [\"a\", \"b\", \"\\u001b[2J\"], $qkv}" '\$\.tokens\[2\]: .*which holds U\+001B$'
expect_bad_input "{\"source_tokens\": [\"a\", \"b\\rc\", \"d\"], $qkv}" '\$\.source_tokens\[1\]: .*which holds U\+000D$'
printf '{"tokens": ["a\\nb", "c", "e"], %s}' "$qkv" > newline.json
for command in "run --format markdown" "run --heatmap" "check" "decode" "tiled" "grad" "explain --cell weights[0,0]"; do
  # shellcheck disable=SC2086  # the command and its options are words
  expect_exit 2 "newline\.json: \\\$\.tokens\[0\]: expected a label" -- "$T" $command newline.json
done

# A model directory's problem goes through the same loader.
cp -r "$SOURCE_DIR/tests/models/bloom" model
sed -i 's/"softly"/"soft\\tly"/' model/problem.json
expect_exit 2 'model/problem\.json: \$\.tokens\[6\]: .*found "soft\\tly", which holds U\+0009$' -- "$T" check model/problem.json

# CJK takes two columns, a combining mark none: the columns line up, in any locale.
printf '{"tokens": ["cat", "猫", "日本", "cafe\\u0301"], %s}' '"Q": [[1], [0], [1], [2]], "K": [[1], [0], [1], [2]], "V": [[1], [0], [1], [2]]' > cjk.json
printf '%s\n' "         cat      猫    日本    café" "cat   0.1966  0.0723  0.1966  0.5344" "猫    0.2500  0.2500  0.2500  0.2500" \
  "日本  0.1966  0.0723  0.1966  0.5344" "café  0.1050  0.0142  0.1050  0.7758" | sed 's/é/e\xcc\x81/' > cjk.want
for locale in C C.UTF-8 POSIX; do
  LC_ALL=$locale "$T" run cjk.json --steps weights | tail -n 5 > "cjk.$locale"
  expect_exit 0 "" -- diff cjk.want "cjk.$locale"
done

# The text heatmap keeps its cells 7 columns wide and cuts longer column labels with "…".
printf '{"tokens": ["extraordinary", "日本語のラベル", "cat"], %s}' "$qkv" > long.json
"$T" run long.json --heatmap --color never > long.txt
expect_exit 0 "" -- grep -qxF '               extrao… 日本語…     cat' long.txt
expect_exit 0 "" -- grep -qxF 'extraordinary  0.4011▒ 0.1978░ 0.4011▒' long.txt
expect_exit 0 "" -- grep -qxF '日本語のラベル 0.1978░ 0.4011▒ 0.4011▒' long.txt

# The title heads every output: a newline in it is refused the same way.
printf '%s' '{"title": "two\nlines", "Q": [[1]], "K": [[1]], "V": [[1]]}' > title.json
expect_exit 2 '^attn-trace: error: title.json: \$\.title: expected a title without a newline, tab or other control character \(one would break the heading of every output\), found "two\\nlines", which holds U\+000A$' -- "$T" run title.json --format markdown

finish
