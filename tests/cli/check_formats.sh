# check for CI (docs/COMMANDS.md#checks-that-ci-reads): --format json read back, --format
# github's workflow commands and their escaping, --junit FILE beside the text, the same
# counts and exit codes as the text; --decimals on a student's hand-worked sheet. JUnit
# read by a real parser: python/tests/test_check_formats.py (junitparser).
source "$SOURCE_DIR/tests/cli/lib.sh"
T=$ATTN_TRACE
E=$SOURCE_DIR/examples

# A student's answers, worked by hand to 2 decimals: softmax([1, 0]) = e/(e+1) = 0.7311 → 0.73,
# out row 0 = 0.7311·(1, 2) + 0.2689·(3, 4) = (1.5379, 2.5379) → (1.54, 2.54), and row 1 → (2.46, 3.46).
cat > student.json <<'JSON'
{"title": "a student's sheet: two tokens, no scale, answers to 2 decimals",
 "Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[1, 2], [3, 4]], "scale": "none",
 "expect": [
  {"name": "scores", "data": [[1, 0], [0, 1]]},
  {"name": "weights", "data": [[0.73, 0.27], [0.27, 0.73]]},
  {"name": "out", "data": [[1.54, 2.54], [2.46, 3.46]]}]}
JSON
expect_exit 0 "^1 passed, 0 failed$" -- "$T" check student.json --decimals 2
expect_exit 1 "atol 0\.0001 " -- "$T" check student.json                       # the default tolerance is 1e-4
sed 's/2.46, 3.46/2.47, 3.46/' student.json > wrong_digit.json
expect_exit 1 "expected 2\.47, got 2\.462117157; tolerance atol 0\.005 " -- "$T" check wrong_digit.json --decimals 2
expect_exit 1 "^0 passed, 1 failed$" -- "$T" check student.json --decimals 2 --atol 1e-4   # --atol wins
# An entry's own tolerance wins over --decimals.
python3 -c "import json; p = json.load(open('student.json')); p['expect'][2]['atol'] = 1e-6; json.dump(p, open('own.json', 'w'))"
expect_exit 1 "tolerance atol 1e-06 " -- "$T" check own.json --decimals 2
expect_exit 2 "--decimals '16': expected a whole number from 0 to 15" -- "$T" check student.json --decimals 16

# A passing file, a failing one (with a name GitHub must escape) and a bad one, at --decimals 2.
cp "$E/softmax_2_0_0.json" pass.json
cp wrong_digit.json 'odd%name,with:colon.json'
echo '{"Q": [[1]]' > bad.json
expect_exit 2 "^1 passed, 2 failed$" -- "$T" check pass.json 'odd%name,with:colon.json' bad.json --decimals 2

"$T" check pass.json 'odd%name,with:colon.json' bad.json --decimals 2 --format json > report.json; status=$?
expect_exit 0 "" -- test "$status" = 2
expect_exit 0 "" -- python3 - <<'PY'
import json
r = json.load(open("report.json"))
assert (r["command"], r["passed"], r["failed"], r["exit_code"]) == ("check", 1, 2, 2), r
assert [f["status"] for f in r["files"]] == ["pass", "fail", "error"], r["files"]
fail = r["files"][1]
out = next(s for s in fail["steps"] if s["step"].startswith("out"))
assert (out["passed"], out["failed"], out["compared"], out["more_mismatches"]) == (False, 1, 4, 0), out
assert out["mismatches"] == [{"row": 1, "col": 0, "expected": 2.47, "got": out["mismatches"][0]["got"]}], out
assert abs(out["mismatches"][0]["got"] - 2.4621171572600098) < 1e-12
assert "malformed JSON" in r["files"][2]["error"], r["files"][2]
PY

"$T" check pass.json 'odd%name,with:colon.json' bad.json --decimals 2 --format github > github.txt
expect_exit 0 "" -- python3 - <<'PY'
import re
lines = open("github.txt").read().splitlines()
# A workflow command: ::name key=value,key=value::message, values escaped (% CR LF : ,), message (% CR LF).
command = re.compile(r"^::(error|warning|notice) (file=[^,:\r\n]*)(,title=[^,:\r\n]*)?::[^\r\n]*$")
errors = [l for l in lines if l.startswith("::")]
assert all(command.match(l) for l in errors), errors
assert errors[0].startswith("::error file=odd%25name%2Cwith%3Acolon.json,title=attn-trace check%3A run differs::FAIL odd%25name,with:colon.json (run)%0A"), errors[0]
assert errors[1].startswith("::error file=bad.json,title=attn-trace check%3A bad input::ERROR bad.json%0Abad.json: malformed JSON"), errors[1]
assert lines[0].startswith("PASS pass.json (run") and lines[-1] == "1 passed, 2 failed", lines
PY

# --junit FILE: the text on the console as without it, the XML in the file.
expect_exit 2 "^1 passed, 2 failed$" -- "$T" check pass.json 'odd%name,with:colon.json' bad.json --decimals 2 --junit check.xml
expect_exit 0 '<testsuites name="attn-trace check" tests="3" failures="1" errors="1"' -- cat check.xml
expect_exit 2 "cannot write the file" -- "$T" check pass.json --junit no/such/folder/check.xml
expect_exit 2 "--format 'csv': expected one of text, json, junit, github" -- "$T" check pass.json --format csv
# A sheet of exercises as JSON (a list of problems) is one test a problem, FILE[k].
"$T" exercise --topic softmax,causal,kv-cache --count 3 --format json > sheet.json
expect_exit 0 "^PASS sheet\.json\[2\] \(decode " -- "$T" check sheet.json
python3 -c "import json; s = json.load(open('sheet.json')); s[1]['expect'][-1]['data'][0][0] += 0.01; json.dump(s, open('sheet_wrong.json', 'w'))"
expect_exit 1 "^FAIL sheet_wrong\.json\[1\] \(run\)$" -- "$T" check sheet_wrong.json
expect_exit 1 "^2 passed, 1 failed$" -- "$T" check sheet_wrong.json
# The questions say how answers are written and checked.
expect_exit 0 "^Write each number to 4 decimals\. Keep every digit while you work" -- "$T" exercise --topic softmax --part questions
finish
