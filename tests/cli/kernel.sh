# The CPU kernel's target from the command line: --version and bench name it,
# ATTN_TRACE_KERNEL forces one, and a target that does not exist, or that this CPU
# cannot run, is exit 2 saying what it can run (never SIGILL).
source "$SOURCE_DIR/tests/cli/lib.sh"
A=$ATTN_TRACE
E=$SOURCE_DIR/examples/damaged_on_arrival.json

expect_exit 0 "^CPU kernel: .*compiled for avx512, avx2, baseline; this CPU runs .*baseline" -- "$A" --version
expect_exit 0 "^CPU kernel: baseline \(the x86-64 baseline \(SSE2\).*as ATTN_TRACE_KERNEL asks" -- env ATTN_TRACE_KERNEL=baseline "$A" --version
expect_exit 0 "CPU kernel baseline" -- env ATTN_TRACE_KERNEL=baseline "$A" bench --n 64 --repeats 1 --impl fast
expect_exit 0 "\"kernel\": \"baseline\"" -- env ATTN_TRACE_KERNEL=baseline "$A" bench --n 64 --repeats 1 --impl fast --format json
# The same numbers from every target this CPU runs as from the full trace, to 1e-12 (f64).
"$A" run "$E" --steps out --format csv > full.csv
for kernel in $("$A" --version | sed -n 's/.*this CPU runs //p' | tr -d ','); do
  env ATTN_TRACE_KERNEL="$kernel" "$A" run "$E" --fast --steps out --format csv > "$kernel.csv"
  expect_exit 0 "^agree$" -- awk -F, 'NR == FNR { for (i = 2; i <= NF; i++) want[FNR, i] = $i; next }
    FNR > 1 { for (i = 2; i <= NF; i++) { d = $i - want[FNR, i]; if (d < 0) d = -d; if (d > 1e-12) bad = 1 } }
    END { print (bad || FNR < 4) ? "differ" : "agree" }' full.csv "$kernel.csv"
done
expect_exit 2 "ATTN_TRACE_KERNEL=sse9: expected one of avx512, avx2, baseline \(this CPU runs .*baseline\)" -- env ATTN_TRACE_KERNEL=sse9 "$A" run "$E" --fast
expect_exit 0 "CPU kernel: ATTN_TRACE_KERNEL=sse9: expected one of" -- env ATTN_TRACE_KERNEL=sse9 "$A" --version
if ! "$A" --version | grep -q "this CPU runs avx512"; then
  expect_exit 2 "ATTN_TRACE_KERNEL=avx512: this CPU \(or this build\) cannot run AVX-512" -- env ATTN_TRACE_KERNEL=avx512 "$A" run "$E" --fast
fi

finish
