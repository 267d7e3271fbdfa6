# Helpers for the CLI tests: each tests/cli/*.sh is one CTest test, run with
# $ATTN_TRACE (the binary) and $SOURCE_DIR (the repository) set, in a temp dir.
set -u
failures=0
checks=0

# expect_exit CODE PATTERN -- COMMAND...
# Runs COMMAND; passes when it exits with CODE and its stdout+stderr matches the
# extended regular expression PATTERN ("" matches anything).
expect_exit() {
  local want=$1 pattern=$2
  shift 3
  local output status
  output=$("$@" 2>&1)
  status=$?
  checks=$((checks + 1))
  if [ "$status" != "$want" ]; then
    echo "FAIL: $* exited $status, expected $want"
    echo "$output" | head -20 | sed 's/^/    /'
    failures=$((failures + 1))
  elif [ -n "$pattern" ] && ! grep -Eq -- "$pattern" <<<"$output"; then
    echo "FAIL: $* output does not match /$pattern/"
    echo "$output" | head -20 | sed 's/^/    /'
    failures=$((failures + 1))
  fi
}

# expect_bad_input FILE_CONTENT PATTERN: writes the JSON to a file, runs
# `attn-trace run` on it, expects exit 2 and an error naming the file and PATTERN.
expect_bad_input() {
  local content=$1 pattern=$2
  printf '%s' "$content" > bad.json
  expect_exit 2 "attn-trace: error: bad.json: .*$pattern" -- "$ATTN_TRACE" run bad.json
}

finish() {
  echo "$((checks - failures)) passed, $failures failed"
  [ "$failures" = 0 ]
}
