# Worksheets (docs/COMMANDS.md#worksheets): for every topic, --part questions prints
# none of the answer's values (read from the JSON key) and numbers the exercises as
# --part answers does; --count cycles a topic list and counts the seed up; the LaTeX
# questions and answers of every topic compile with pdflatex; JSON questions parse and
# hold no "expect"; bad --part and --count values are usage errors naming the nearest.
source "$SOURCE_DIR/tests/cli/lib.sh"
A=$ATTN_TRACE

require_document_tools

# The exercise headings of a sheet in any format, without the format's markup (a page's <title> aside).
headings() { grep -Eo '^(# |\\section\*\{|<h1>)?Exercise [0-9]+: .*\(topic [a-z-]+, seed [0-9]+\)' "$1" | grep -Eo 'Exercise [0-9]+: .*'; }
# The expected values of a JSON key that are not whole numbers, as the answer's tables print
# them (4 decimals, sign aside). Whole numbers are left out: a table of them prints "2", as
# the givens do.
answer_values() {
  python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))
print("\n".join(sorted({"%.4f" % abs(x) for e in p["expect"] for row in e["data"] for x in row if type(x) is float and x != int(x)})))' "$1"
}

# The topics as the tool lists them for completion, so a new topic is tested too.
topics=$("$A" words topics)
[ "$(wc -l <<<"$topics")" -eq 16 ] || fail "words topics: expected the 16 topics, got: $topics"
for topic in $topics; do
  for seed in 0 3; do
    name="${topic}_$seed"
    "$A" exercise --topic "$topic" --seed "$seed" --part answers --format json > "$name.key.json" || fail "$name: json key exited $?"
    answer_values "$name.key.json" > "$name.values"
    checks=$((checks + 1))
    [ -s "$name.values" ] || fail "$name: the key has no value that is not a whole number, nothing to look for"
    for format in text markdown latex html; do
      "$A" exercise --topic "$topic" --seed "$seed" --part questions --format "$format" > "$name.q.$format" || fail "$name: $format questions exited $?"
      "$A" exercise --topic "$topic" --seed "$seed" --part answers --format "$format" > "$name.a.$format" || fail "$name: $format answers exited $?"
      checks=$((checks + 1))
      if grep -qF -f "$name.values" "$name.q.$format"; then
        fail "$name: the $format questions print answer values: $(grep -oF -f "$name.values" "$name.q.$format" | sort -u | head -3 | tr '\n' ' ')"
      fi
      checks=$((checks + 1))
      missing=$(grep -vxF -f <(grep -oF -f "$name.values" "$name.a.$format" | sort -u) "$name.values" | head -3 | tr '\n' ' ')
      [ -z "$missing" ] || fail "$name: the $format answers do not print the key's values $missing"
      checks=$((checks + 1))
      [ "$(headings "$name.q.$format")" = "$(headings "$name.a.$format")" ] && [ "$(headings "$name.q.$format" | wc -l)" = 1 ] ||
        fail "$name: $format questions and answers are numbered differently: $(headings "$name.q.$format") / $(headings "$name.a.$format")"
      checks=$((checks + 1))
      grep -q "Compute:" "$name.q.$format" && ! grep -q "Answer" "$name.q.$format" && ! grep -q "Compute:" "$name.a.$format" ||
        fail "$name: $format questions without the tasks or with an answer, or answers with the tasks"
    done
  done
done

# A sheet of three from a list of two: the topics cycle, the seed counts up, numbered 1..3 in every format.
cat > cycle.expected <<'END'
Exercise 1: Softmax row by row, then the weighted sum (topic softmax, seed 5)
Exercise 2: The causal mask (topic causal, seed 6)
Exercise 3: Softmax row by row, then the weighted sum (topic softmax, seed 7)
END
for part in questions answers both; do
  for format in text markdown latex html; do
    "$A" exercise --topic softmax,causal --count 3 --seed 5 --part "$part" --format "$format" > "cycle.$part.$format" || fail "cycle: $part $format exited $?"
    checks=$((checks + 1))
    diff <(headings "cycle.$part.$format") cycle.expected > /dev/null || fail "cycle: $part $format headings: $(headings "cycle.$part.$format" | tr '\n' ';')"
  done
done
# Exercise 2 of the sheet is the causal exercise of seed 6 written alone, renumbered.
"$A" exercise --topic causal --seed 6 --part questions --format text | sed 's/^Exercise 1: /Exercise 2: /' > alone.txt
checks=$((checks + 1))
diff <(awk '/^Exercise 2: /{on = 1} /^Exercise 3: /{on = 0} on' cycle.questions.text) <(cat alone.txt; echo) > /dev/null ||
  fail "cycle: exercise 2 is not the causal exercise of seed 6"

# JSON questions: problem files without "expect", the same givens as the key; a sheet is an array of them.
"$A" exercise --topic softmax,causal --count 3 --seed 5 --part questions --format json > cycle.q.json
"$A" exercise --topic softmax,causal --count 3 --seed 5 --part answers --format json > cycle.a.json
expect_exit 0 "^3 problems, no expect; titles: exercise softmax \(seed 5\).*; exercise causal \(seed 6\).*; exercise softmax \(seed 7\)" -- python3 -c '
import json, sys
q, a = json.load(open("cycle.q.json")), json.load(open("cycle.a.json"))
assert all("expect" not in p for p in q) and all("expect" in p for p in a)
assert [{k: v for k, v in p.items() if k != "expect"} for p in a] == q
print(len(q), "problems, no expect; titles:", "; ".join(p["title"] for p in q))'
"$A" exercise --topic kv-cache --seed 2 --part questions --format json > kv.q.json
expect_exit 0 "^no expect$" -- python3 -c 'import json; p = json.load(open("kv.q.json")); print("no expect" if "expect" not in p and "Q" in p else "expect")'
# The one-exercise key is the problem file check passes, as before.
"$A" exercise --topic kv-cache --seed 2 --part answers --format json > kv.a.json
expect_exit 0 "^1 passed, 0 failed" -- "$A" check kv.a.json

# The LaTeX questions and answers of every topic, one sheet each, compile.
all=$(tr '\n' ',' <<<"$topics" | sed 's/,$//')
for part in questions answers; do
  { latex_preamble; "$A" exercise --topic "$all" --count 15 --part "$part" --format latex || fail "latex $part exited $?"; echo '\end{document}'; } > "sheet_$part.tex"
  check_latex "sheet_$part"
done
checks=$((checks + 1))
[ "$(grep -c 'section\*{Exercise' sheet_questions.tex)" = 15 ] || fail "the LaTeX questions sheet has not 15 exercises"
# The Markdown questions render as they are (nothing read as HTML).
"$A" exercise --topic "$all" --count 15 --part questions > sheet_questions.md
check_markdown sheet_questions

# Bad values: usage errors, exit 2, naming the nearest valid value and the command's usage line.
expect_exit 2 "^attn-trace: error: --part 'question' \(did you mean 'questions'\?\): expected one of questions, answers, both" -- "$A" exercise --topic softmax --part question
expect_exit 2 "Usage: attn-trace exercise \[OPTIONS\]" -- "$A" exercise --topic softmax --part key
expect_exit 2 "^attn-trace: error: --count '0': expected a whole number of exercises from 1 to 100 \(the nearest is 1\)" -- "$A" exercise --topic softmax --count 0
expect_exit 2 "^attn-trace: error: --count '500': expected a whole number of exercises from 1 to 100 \(the nearest is 100\)" -- "$A" exercise --topic softmax --count 500
expect_exit 2 "^attn-trace: error: --count '2.4': .*\(the nearest is 2\)" -- "$A" exercise --topic softmax --count 2.4
expect_exit 2 "^attn-trace: error: --count 'three': expected a whole number of exercises from 1 to 100$" -- "$A" exercise --topic softmax --count three
expect_exit 2 "^attn-trace: error: --topic 'casual' \(did you mean 'causal'\?\): expected one of scores, softmax" -- "$A" exercise --topic softmax,casual --count 2
expect_exit 2 "^attn-trace: error: --topic '': expected one of scores" -- "$A" exercise --topic softmax, --count 2

# The completion offers --part's values and completes a topic list's last item.
source "$SOURCE_DIR/completion/attn-trace.bash"
complete_last() { COMP_WORDS=("$A" "$@"); COMP_CWORD=$#; COMPREPLY=(); _attn_trace; printf '%s\n' "${COMPREPLY[@]}"; }
expect_exit 0 "^questions$" -- complete_last exercise --part qu
expect_exit 0 "^softmax,causal$" -- complete_last exercise --topic softmax,cau
finish
