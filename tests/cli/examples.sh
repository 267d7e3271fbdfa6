# Every worked example and every PyTorch golden file, through `attn-trace check`.
source "$SOURCE_DIR/tests/cli/lib.sh"
cd "$SOURCE_DIR"
expect_exit 0 "^[0-9]+ passed, 0 failed$" -- "$ATTN_TRACE" check examples/*.json
# Golden files from tools/make_golden.py (PyTorch, float64): f64 to 1e-10, f32 to 1e-5.
expect_exit 0 "^[0-9]+ passed, 0 failed$" -- "$ATTN_TRACE" check tests/golden/*.json
expect_exit 0 "^[0-9]+ passed, 0 failed$" -- "$ATTN_TRACE" check tests/golden/*.json --dtype f32 --atol 1e-5
# ...and f32 is really float32: at 1e-10 it must fail.
expect_exit 1 " failed$" -- "$ATTN_TRACE" check tests/golden/mha_nomask.json --dtype f32 --atol 1e-10
finish
