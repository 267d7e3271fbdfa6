# Document faults found by users (docs/COMMANDS.md#exercise): each test failed before its fix.
source "$SOURCE_DIR/tests/cli/lib.sh"
T=$ATTN_TRACE

# "Without the scale (s = 1)": the weights are softmax(S), not softmax(S_s).
for seed in 0 1 2; do
  "$T" exercise --topic scale --seed "$seed" > scale.md
  expect_exit 0 'softmax\}\(S\)\$' -- grep -A2 "Without the scale" scale.md
  expect_exit 1 "" -- bash -c "grep -A2 'Without the scale' scale.md | grep -q 'S_{s}'"
done

# A thousands separator in LaTeX maths is {,}: "1,024" in math mode typesets as "1, 024".
expect_exit 0 '=1\{,\}024\$ numbers' -- "$T" exercise --topic kv-cache --seed 1 --format latex
for topic in kv-cache cost; do
  for seed in 0 1 2; do
    "$T" exercise --topic "$topic" --seed "$seed" --format latex > sheet.tex
    # Every other piece between dollars is maths (the sheets escape a text dollar as \$).
    expect_exit 0 "" -- python3 -c "import re, sys; t = open('sheet.tex').read().replace(r'\\\$', ''); bad = [m for m in t.split('\$')[1::2] if re.search(r'[0-9],[0-9]{3}(?![0-9])', m)]; sys.exit(f'{bad[:2]}' if bad else 0)"
  done
done
# The README's problem file is the example it names, key for key (its expect aside).
expect_exit 0 "" -- python3 - "$SOURCE_DIR" <<'PY'
import json, re, sys
readme = open(f"{sys.argv[1]}/README.md", encoding="utf-8").read()
section = readme.split("## A problem file", 1)[1]
name = re.search(r"`(examples/[a-z_]+\.json)`", section).group(1)
shown = json.loads(re.search(r"```json\n(.*?)```", section, re.S).group(1))
example = json.load(open(f"{sys.argv[1]}/{name}"))
example.pop("expect", None)
assert shown == example, (name, shown, example)
PY
finish
