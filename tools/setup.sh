#!/usr/bin/env bash
# Installs what is missing (Debian packages, as root), builds attn-trace, and runs
# the main worked example. Usage: bash tools/setup.sh
#                                 ATTN_TRACE_CUDA=ON bash tools/setup.sh   with the CUDA backend (needs nvcc)
# The compiler's output goes to build/build.log; on a failure its end is printed.
set -euo pipefail
cd "$(dirname "$0")/.."

# texlive-latex-base and cmark-gfm are for the tests: every LaTeX output is compiled
# with pdflatex and every Markdown output rendered as GitHub would (tests/cli/*documents.sh).
# man-db (man, groff) renders the installed man page (tests/cli/install.sh).
# chromium, chromium-driver and python3-selenium open the HTML pages headless (tests/cli/browser.sh).
packages=(cmake g++ ninja-build pkg-config libcli11-dev libfmt-dev nlohmann-json3-dev catch2 libopenblas-dev texlive-latex-base cmark-gfm man-db
          chromium chromium-driver python3-selenium)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 ||
    { echo "apt-get install failed; run it by hand to see why: apt-get install ${missing[*]}" >&2; exit 1; }
fi

mkdir -p build
echo "building build/attn-trace (log: build/build.log)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTN_TRACE_CUDA="${ATTN_TRACE_CUDA:-OFF}" > build/build.log 2>&1 &&
  cmake --build build >> build/build.log 2>&1 ||
  { tail -40 build/build.log >&2; echo "the build failed: build/build.log has the whole output" >&2; exit 1; }
echo
./build/attn-trace run examples/damaged_on_arrival.json --mask causal --steps scores,scaled,masked,weights,out
