# `bench` and the fast path of `run`, at tiny sizes so the suite stays fast.
source "$SOURCE_DIR/tests/cli/lib.sh"
bench=("$ATTN_TRACE" bench --n 8,33 --dk 4 --heads 2 --threads 2 --repeats 2 --warmup 1)

# JSON: per setting and implementation the timings, GFLOP/s, score bytes and the difference between implementations.
expect_exit 0 '"attn_trace_bench": 1' -- "${bench[@]}" --format json
for field in n m d_k heads causal impl status median_ms min_ms max_ms times_ms gflops score_bytes max_abs_diff compared_with; do
  expect_exit 0 "\"$field\": " -- "${bench[@]}" --format json
done
expect_exit 0 '"impl": "fast",' -- "${bench[@]}" --format json --causal --impl naive,fast
# naive and fast each agree with the CPU reference pipeline to float32 rounding.
expect_exit 0 '"max_abs_diff": [0-9.]+(e-0[6-9])?,' -- "${bench[@]}" --format json
expect_exit 0 '"compared_with": "cpu reference \(24 rows\)"' -- "${bench[@]}" --format json --impl naive
expect_exit 0 '"status": "unavailable"' -- "${bench[@]}" --format json --impl fast,cuda
expect_exit 0 '^n,m,d_k,heads,causal,impl,status,median_ms' -- "${bench[@]}" --format csv
# Every implementation is judged by the CPU reference, the first one too; in f64 to ~1e-16.
expect_exit 0 'naive .*e-1[5-7] vs cpu reference \(8 rows\)' -- "${bench[@]}" --dtype f64
expect_exit 0 'fast .*e-1[5-7] vs cpu reference \(24 rows\)' -- "${bench[@]}" --dtype f64
expect_exit 0 '2 repeats after 1 warm-up \(ms' -- "${bench[@]}"
expect_exit 0 '1 repeat after 0 warm-ups \(ms' -- "$ATTN_TRACE" bench --n 8 --dk 4 --impl fast --repeats 1 --warmup 0
expect_exit 0 '' -- "${bench[@]}" --svg chart.svg
expect_exit 0 '<polyline' -- cat chart.svg
expect_exit 0 'n²' -- cat chart.svg
# Decode steps alone are drawn against T, with a line ∝ T (each cached key is read once).
expect_exit 0 '' -- "$ATTN_TRACE" bench --decode --cache 64,256 --heads 2 --dk 4 --threads 2 --repeats 2 --svg decode.svg
expect_exit 0 '>T, cached tokens \(log scale\)<' -- cat decode.svg
expect_exit 0 '>∝ T<' -- cat decode.svg
expect_exit 0 'decode step time vs T' -- cat decode.svg
# Only plotted lengths get a tick: naive skips n = 65536 (16 GiB of scores), so the chart is the decode step's.
expect_exit 0 '' -- "$ATTN_TRACE" bench --impl naive --n 65536 --cache 64 --heads 2 --dk 4 --threads 2 --repeats 1 --svg skipped.svg
expect_exit 1 '' -- grep -q 65536 skipped.svg
expect_exit 2 'impl' -- "$ATTN_TRACE" bench --impl slow
expect_exit 0 'Examples:' -- "$ATTN_TRACE" bench --help
# A setting whose memory estimate passes --max-memory stops the run before anything is measured
# (docs/COMMANDS.md#bench): exit 2, the setting, the estimate's parts and the flags to change.
expect_exit 2 'the backward setting n = 1048576 with fast would hold about 70.8 GiB \(inputs 16.0 GiB, .*reference rows .*\); the limit is 4.0 GiB \(--max-memory\): lower --n, --heads, --kv-heads or --dk \(or --threads, --block-q and --block-k\), or raise --max-memory' -- \
  "$ATTN_TRACE" bench --grad --n 1048576 --heads 8 --threads 2
expect_exit 2 'the decode setting T = 1048576 .*lower --cache' -- "$ATTN_TRACE" bench --decode --cache 1048576 --heads 32 --kv-heads 8 --dk 128 --threads 2
expect_exit 2 'the forward setting n = 8 with naive would hold about 16 KiB \(inputs 2 KiB, .*the limit is 1 KiB' -- "${bench[@]}" --max-memory 1K
expect_exit 0 '"impl": "fast"' -- "${bench[@]}" --format json --max-memory 64M

# run --fast keeps row_max, row_sum and out, and says why it took the fast path.
"$ATTN_TRACE" random --n 40 --dk 4 --mask causal --seed 3 -o small.json
expect_exit 0 'note: fast path \(--fast\)' -- "$ATTN_TRACE" run small.json --fast
expect_exit 0 '"name": ?"row_sum"' -- "$ATTN_TRACE" run small.json --fast --format json
# ... and equals the full trace's out (check reads the fast trace as a golden file).
"$ATTN_TRACE" run small.json --fast --format json --steps out > fast_out.json
expect_exit 0 '1 passed, 0 failed' -- "$ATTN_TRACE" check small.json --golden fast_out.json
finish
