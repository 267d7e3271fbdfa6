# bench's roofs and roofline (docs/COMMANDS.md#bench), and bench --decode, at tiny sizes.
# No timing is asserted: the machine is shared.
source "$SOURCE_DIR/tests/cli/lib.sh"
decode=("$ATTN_TRACE" bench --decode --cache 40,97 --heads 8 --kv-heads 2 --dk 19 --threads 2 --repeats 2 --warmup 1)

# Text: both roofs measured, and per setting the cache bandwidth, intensity, bound and roof.
expect_exit 0 'roofs: multiply-add peak [0-9.]+ GFLOP/s .*copy bandwidth [0-9.]+ GB/s' -- "${decode[@]}"
expect_exit 0 'cache GB/s +% copy +FLOP/B +bound +roof' -- "${decode[@]}"
# Which roof bounds a decode step depends on the machine (about 2 FLOP/B: memory on any
# real one, compute under the sanitizers, whose multiply-add peak is a few GFLOP/s).
expect_exit 0 '^ +97  fast .* (memory|compute) .*e-0[6-9] vs cpu reference \(1 row\)' -- "${decode[@]}"
expect_exit 0 'heads = 8 over 2 KV heads' -- "${decode[@]}"

# JSON: the new keys, with sane values.
"${decode[@]}" --format json > decode.json || fail "bench --decode --format json failed"
python3 - decode.json <<'PY' || fail "bench --decode JSON keys or values"
import json, sys
report = json.load(open(sys.argv[1]))
roofs = report["roofs"]
assert roofs["fma_gflops"] > 0 and roofs["copy_gb_per_s"] > 0, roofs
assert [r["m"] for r in report["results"]] == [40, 97]
for r in report["results"]:
    assert r["mode"] == "decode" and r["impl"] == "fast" and r["status"] == "ok" and r["n"] == 1 and r["kv_heads"] == 2, r
    assert r["cache_bytes"] == r["m"] * 2 * (19 + 19) * 4, r            # T · H_kv · (d_k + d_v) · 4
    assert r["bytes"] == r["cache_bytes"] + 2 * 8 * 19 * 4, r           # + q in, out written
    assert r["flops"] == 4 * r["m"] * 19 * 8, r
    assert abs(r["intensity"] - r["flops"] / r["bytes"]) < 1e-12, r
    memory = r["intensity"] * roofs["copy_gb_per_s"]                   # the lower roof bounds it
    assert r["bound_by"] == ("memory" if memory < roofs["fma_gflops"] else "compute"), r
    assert abs(r["bound_gflops"] - min(memory, roofs["fma_gflops"])) < 1e-9 * r["bound_gflops"], r
    assert abs(r["fraction_of_bound"] - r["gflops"] / r["bound_gflops"]) < 1e-9, r
    assert r["cache_gb_per_s"] > 0 and r["max_abs_diff"] < 1e-5, r
PY
# Forward settings get the roofline figures too: n/4 FLOP/B in float32, compute-bound at n = 1024.
"$ATTN_TRACE" bench --n 64,1024 --dk 16 --impl fast --threads 2 --repeats 1 --warmup 0 --format json > forward.json
python3 - forward.json <<'PY' || fail "bench forward roofline keys"
import json, sys
report = json.load(open(sys.argv[1]))
r = report["results"][1]
assert r["mode"] == "forward", r
assert r["bytes"] == 4 * 1024 * 16 * 4 and r["intensity"] == 256.0 and r["bound_by"] == "compute", r
assert r["bound_gflops"] == report["roofs"]["fma_gflops"], r
PY
expect_exit 0 '^n,m,d_k,heads,causal,impl,status,median_ms,.*,mode,kv_heads,intensity,bound_gflops,bound_by,fraction_of_bound,cache_gb_per_s' -- "${decode[@]}" --format csv
expect_exit 0 '^1,40,19,8,false,fast,ok,.*,decode,2,[0-9.e-]+,[0-9.e-]+,(memory|compute),' -- "${decode[@]}" --format csv

# --roofline: an SVG with both roofs labelled and one labelled point per setting.
expect_exit 0 '' -- "${decode[@]}" --roofline roofline.svg
expect_exit 0 '<svg' -- cat roofline.svg
expect_exit 0 'multiply-add peak [0-9.]+ GFLOP/s' -- cat roofline.svg
expect_exit 0 'copy bandwidth [0-9.]+ GB/s' -- cat roofline.svg
expect_exit 0 'fast decode T=97' -- cat roofline.svg
expect_exit 0 '' -- "$ATTN_TRACE" bench --n 32,64 --dk 8 --impl naive,fast --repeats 1 --warmup 0 --roofline forward.svg --svg time.svg
expect_exit 0 'fast n=64' -- cat forward.svg
expect_exit 0 'naive n=32' -- cat forward.svg
expect_exit 0 'n²' -- cat time.svg

# Bad input: exit 2 with a message naming the setting.
expect_exit 2 'cache' -- "$ATTN_TRACE" bench --decode --cache 0
expect_exit 2 '--heads 6 is not a multiple of --kv-heads 4' -- "$ATTN_TRACE" bench --decode --cache 8 --heads 6 --kv-heads 4
expect_exit 2 '--heads 3 is not a multiple of --kv-heads 2' -- "$ATTN_TRACE" bench --n 8 --heads 3 --kv-heads 2
expect_exit 2 'decode' -- "$ATTN_TRACE" bench --decode --n 8
# --cache without --decode adds decode settings after the forward ones: one chart holds both.
expect_exit 0 '' -- "$ATTN_TRACE" bench --n 48 --cache 64 --dk 8 --heads 4 --kv-heads 2 --impl fast --repeats 1 --warmup 0 --roofline both.svg
expect_exit 0 'fast n=48' -- cat both.svg
expect_exit 0 'fast decode T=64' -- cat both.svg
expect_exit 0 '^ +T  impl' -- "$ATTN_TRACE" bench --n 48 --cache 64 --dk 8 --impl fast --repeats 1 --warmup 0
expect_exit 2 '--causal has no meaning for a decode step \(--cache\)' -- "$ATTN_TRACE" bench --decode --cache 8 --causal
expect_exit 0 'bench --decode --cache' -- "$ATTN_TRACE" bench --help
# bench --grad: the fused backward, forward included, judged by grad_q's reference rows.
expect_exit 0 'backward \(forward included; GFLOP/s counts 14·n·m·d_k per head\)' -- "$ATTN_TRACE" bench --grad --n 40 --dk 8 --causal --repeats 1 --warmup 0
expect_exit 0 '^ +40  fast .*e-0[6-9] vs cpu reference grad_q \(24 rows\)' -- "$ATTN_TRACE" bench --grad --n 40 --dk 8 --causal --repeats 1 --warmup 0
expect_exit 0 '"mode": ?"backward"' -- "$ATTN_TRACE" bench --grad --n 40 --dk 8 --repeats 1 --warmup 0 --format json
expect_exit 0 '' -- "$ATTN_TRACE" bench --grad --n 40 --dk 8 --repeats 1 --warmup 0 --roofline grad_roofline.svg
expect_exit 0 'fast backward n=40' -- cat grad_roofline.svg
expect_exit 2 '--grad times the fused backward .*no unfused backward' -- "$ATTN_TRACE" bench --grad --n 40 --impl naive,fast
expect_exit 2 'excludes' -- "$ATTN_TRACE" bench --grad --decode
finish
