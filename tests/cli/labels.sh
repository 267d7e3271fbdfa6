# Token labels with unusual characters (docs/PROBLEM.md#labels-title-tokens-source_tokens):
# a newline, tab or other control character is shown as its escape (\n, \t, \u001b) by
# every command and from a model directory's problem too; CJK and combining marks line up
# by terminal columns, whatever the locale; the text heatmap cuts a long column label
# with a visible "…" (docs/COMMANDS.md#options-shared-by-run-decode-and-tiled). Each
# check failed on the main of 2026-12-06: rows split, columns off, labels cut silently.
source "$SOURCE_DIR/tests/cli/lib.sh"
T=$ATTN_TRACE
qkv='"Q": [[1, 0], [0, 1], [1, 1]], "K": [[1, 0], [0, 1], [1, 1]], "V": [[1, 0], [0, 1], [1, 1]]'

# Shown as their escapes (\n, \t, \u001b), so every row stays one line, by every command
# and from a model directory's problem too (tools/export_layer.py writes a tokenizer's newline token).
printf '{"title": "two\\nlines", "tokens": ["a\\nb", "c\\td", "\\u001b[2J"], %s}' "$qkv" > newline.json
expect_exit 0 '^attn-trace run: two\\nlines$' -- "$T" run newline.json --color never
expect_exit 0 '^a\\nb       0\.4011  0\.1978     0\.4011$' -- "$T" run newline.json --steps weights --color never
expect_exit 0 '^             a\\nb    c\\td  \\u001b\[2J$' -- "$T" run newline.json --steps weights --color never
for command in "run --format markdown" "run --heatmap" "check" "decode" "tiled" "grad" "explain --cell weights[0,0]"; do
  # shellcheck disable=SC2086  # the command and its options are words
  "$T" $command newline.json > out.txt 2>&1 || true
  expect_exit 1 "" -- grep -q $'\x1b' out.txt  # no raw escape character from a label
done

# A model directory's problem goes through the same loader.
cp -r "$SOURCE_DIR/tests/models/bloom" model
sed -i 's/"softly"/"soft\\tly"/' model/problem.json
expect_exit 0 'soft\\tly' -- "$T" run model/problem.json --steps weights --color never

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

finish
