# The HTML pages in headless chromium (tests/browser/pages.py, and the model view's,
# tests/browser/model_view.py): skipped (77) where
# chromium, chromedriver or python3-selenium is missing, unless
# ATTN_TRACE_REQUIRE_BROWSER=1 (CI), where that is a failure. Screenshots go to
# screenshots/ beside the binary (build/screenshots).
shots="$(dirname "$ATTN_TRACE")/screenshots"
/usr/bin/python3 "$SOURCE_DIR/tests/browser/pages.py" "$shots"
status=$?
if [ "$status" = 0 ]; then
  /usr/bin/python3 "$SOURCE_DIR/tests/browser/model_view.py" "$shots"
  status=$?
fi
if [ "$status" = 77 ] && [ "${ATTN_TRACE_REQUIRE_BROWSER:-0}" = 1 ]; then
  echo "FAIL: the browser tests were skipped, and ATTN_TRACE_REQUIRE_BROWSER=1 asks for them"
  exit 1
fi
exit "$status"
