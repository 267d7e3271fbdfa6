# The chunked local mask from the command line (docs/PROBLEM.md#chunked-llama-4s-local-attention):
# its worked example checks, every command and format takes it, explain names the chunk,
# permute names it as a symmetry breaker, and its bad forms are exit 2.
source "$SOURCE_DIR/tests/cli/lib.sh"
T=$ATTN_TRACE
ex=$SOURCE_DIR/examples/chunked_local_attention.json
damaged=$SOURCE_DIR/examples/damaged_on_arrival.json

expect_exit 0 "^1 passed, 0 failed$" -- "$T" check "$ex"
expect_exit 0 "mask = chunked:2" -- "$T" run "$ex" --steps weights
# From the command line, over the file's own mask, and in a list.
expect_exit 0 "mask = chunked:3" -- "$T" run "$damaged" --mask chunked:3 --steps weights
expect_exit 0 "mask = chunked:2 \+ window:1" -- "$T" run "$damaged" --mask '["chunked:2", "window:1"]' --steps weights
for format in text json markdown latex html; do
  expect_exit 0 "" -- "$T" run "$ex" --format "$format"
done
expect_exit 0 "weights,the,cat,sat,down" -- "$T" run "$ex" --format csv --steps weights
expect_exit 0 "max_abs_diff_vs_full = 0" -- "$T" decode "$ex" --steps out
expect_exit 0 "tiles_skipped = 2" -- "$T" tiled "$ex" --block-q 2 --block-k 2 --steps out
expect_exit 0 "" -- "$T" run "$ex" --fast
expect_exit 0 "grad_q" -- "$T" grad "$ex" --steps grad_q
expect_exit 0 "is in chunk 1 \(positions 2 to 3\) and reads keys 2 to 2, so key 1 is hidden" -- "$T" explain "$ex" --cell 'mask[2,1]'
expect_exit 0 "a chunked mask" -- "$T" permute "$ex" --perm 1,0,3,2
expect_exit 0 "chunked:C" -- "$T" run --help
# Bad input: exit 2 naming what is wrong.
expect_exit 2 "a chunk holds at least 1 position, found 0" -- "$T" run "$ex" --mask chunked:0
expect_exit 2 "expected a whole number after ':', found 'two'" -- "$T" run "$ex" --mask chunked:two
expect_bad_input '{"Q": [[1]], "K": [[1]], "V": [[1]], "mask": {"chunked": 0}}' '\$\.mask\.chunked'
expect_bad_input '{"Q": [[1]], "K": [[1]], "V": [[1]], "mask": {"chunkd": 2}}' 'did you mean "chunked"'
finish
