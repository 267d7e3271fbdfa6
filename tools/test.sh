#!/usr/bin/env bash
# Runs the whole test suite: builds (installing what is missing) and runs ctest.
# Usage: bash tools/test.sh            the Release build
#        SANITIZE=1 bash tools/test.sh  a second build under ASan + UBSan
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cmake >/dev/null || ! dpkg -s libcli11-dev catch2 texlive-latex-base cmark-gfm >/dev/null 2>&1; then
  bash tools/setup.sh >/dev/null
fi
if [ "${SANITIZE:-0}" = 1 ]; then
  dir=build-sanitize
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DATTN_TRACE_SANITIZE=ON >/dev/null
else
  dir=build
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$dir"
ctest --test-dir "$dir" --output-on-failure -j2
