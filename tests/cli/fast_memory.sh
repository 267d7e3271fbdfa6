# The fast path's peak memory (docs/PERFORMANCE.md#the-fast-paths-memory): a run holds Q, K,
# V and the output, and the kernel reads K and V where they are (f64), or its rounded
# copies of them (f32, whose comparison with f64 also holds the f64 output). Measured as
# the peak resident memory of the binary (/usr/bin/time), above the same binary's peak on a
# three-token problem, in units of one (n, d) matrix of doubles. Before the kernel read
# f64 operands in place and the output stopped being copied, n = 65 536 took 206 MB (f64)
# and 240 MB (f32); at n = 16 384 they were 6.0 and 7.1 matrices, and these bounds failed them.
source "$SOURCE_DIR/tests/cli/lib.sh"
A=$ATTN_TRACE
[ -x /usr/bin/time ] || { echo "FAIL: /usr/bin/time is missing (tools/setup.sh installs the time package)"; exit 1; }
# A sanitizer's shadow memory and quarantine are not the program's own: under ASan (CI's
# second build) the peak is not measured, and the test says it was skipped (exit 77).
if grep -qa -e __asan_init -e __tsan_init "$A"; then
  echo "skipped: $A is built with a sanitizer, whose memory is not the program's"
  exit 77
fi

n=16384
"$A" random --n "$n" --dk 64 -o big.json || fail "random exited $?"
peak_kib() { /usr/bin/time -f %M -o peak.txt "$@" > /dev/null || fail "$* exited $?"; tail -1 peak.txt; }
base=$(peak_kib "$A" run "$SOURCE_DIR/examples/damaged_on_arrival.json")
matrix_kib=$((n * 64 * 8 / 1024))
# above_base LIMIT DTYPE: run --fast's peak above the base, at most LIMIT matrices (tenths).
above_base() {
  local tenths=$1 dtype=$2 peak
  checks=$((checks + 1))
  peak=$(peak_kib "$A" run big.json --fast --dtype "$dtype")
  local above=$((peak - base))
  echo "run --fast --dtype $dtype, n = $n, d_k = 64: peak $peak KiB, $above above the base ($base), $((above * 10 / matrix_kib)) tenths of a matrix"
  [ $((above * 10)) -le $((tenths * matrix_kib)) ] ||
    fail "run --fast --dtype $dtype at n = $n: $above KiB above the base, more than $tenths tenths of a $matrix_kib KiB matrix"
}
above_base 45 f64  # Q, K, V, out
above_base 60 f32  # Q, K, V, out (f64 and f32 runs' at once), the rounded K and V
finish
