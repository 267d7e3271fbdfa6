# Every worked example and every PyTorch golden file, through `attn-trace check`.
source "$SOURCE_DIR/tests/cli/lib.sh"
cd "$SOURCE_DIR"
expect_exit 0 "^[0-9]+ passed, 0 failed$" -- "$ATTN_TRACE" check examples/*.json
# Golden files from tools/make_golden.py (PyTorch, float64): f64 to 1e-10, f32 to 1e-5.
expect_exit 0 "^[0-9]+ passed, 0 failed$" -- "$ATTN_TRACE" check tests/golden/*.json
expect_exit 0 "^[0-9]+ passed, 0 failed$" -- "$ATTN_TRACE" check tests/golden/*.json --dtype f32 --atol 1e-5
# ...and f32 is really float32: at 1e-10 it must fail.
expect_exit 1 " failed$" -- "$ATTN_TRACE" check tests/golden/mha_nomask.json --dtype f32 --atol 1e-10
# The model view example (tools/make_model_view_example.sh): each layer's export equals the
# tiny GPT-2's own output and every head's weights, and the page is the one view draws today.
expect_exit 0 "^2 passed, 0 failed$" -- "$ATTN_TRACE" check examples/model_view/layer*/problem.json
# After a change to the page: bash tools/make_model_view_example.sh (or the view line in it).
page=$(mktemp)
"$ATTN_TRACE" view examples/model_view/layer*/problem.json --format html > "$page"
expect_exit 0 "" -- cmp "$page" examples/model_view/model_view.html
rm -f "$page"
finish
