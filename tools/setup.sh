#!/usr/bin/env bash
# Installs what is missing (Debian packages, as root), builds attn-trace, and runs
# the main worked example. Usage:
#   bash tools/setup.sh                        install, build, run the example
#   ATTN_TRACE_CUDA=ON bash tools/setup.sh     the same with the CUDA backend (needs nvcc)
#   bash tools/setup.sh --check                name the packages of the list below that are missing
#                                              (exit 1 if any): tools/test.sh and tools/fuzz.sh ask this
#   bash tools/setup.sh --install              install the missing packages only, no build
# The compiler's output goes to build/build.log, apt's to build/setup.log; on a failure
# their end is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "" | --check | --install) ;;
  *) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac

# The one list of Debian packages that the build and the tests read. CI checks it
# against what a finished build actually read (../shared/tools/setup-covers-build.sh).
packages=(
  # the build: compiler, generator, and the libraries of docs/README.md#dependencies
  cmake g++ ninja-build pkg-config libcli11-dev libfmt-dev nlohmann-json3-dev libhwy-dev
  # the naive baseline of bench (opened at run time; optional for the build)
  libopenblas-dev
  # the tests: Catch2 v2; pdflatex compiles every LaTeX output and cmark-gfm renders every
  # Markdown output as GitHub would (tests/cli/*documents.sh); man-db renders the installed
  # man page (tests/cli/install.sh); chromium, chromium-driver and python3-selenium open the
  # HTML pages headless (tests/cli/browser.sh) and the notebook's traces in their frames
  # (python/tests/test_notebook.py), python3 also checks docs/ citations;
  # poppler-utils (pdftotext) reads the compiled LaTeX's text and pandoc renders the
  # Markdown's maths as other readers than GitHub would (tests/cli/latex_boxes.sh); time
  # (/usr/bin/time) measures the fast path's peak memory (tests/cli/fast_memory.sh)
  catch2 texlive-latex-base cmark-gfm man-db chromium chromium-driver python3 python3-selenium poppler-utils pandoc time
  # the Python package (pip install ., docs/PYTHON.md): Python's headers (python3-dev, and
  # Debian 12's libpython3.11-dev that holds Python.h) and Debian's venv
  python3-dev libpython3.11-dev python3-venv
  # the second compiler: the clang build of everything and the fuzz targets (tools/fuzz.sh)
  clang libclang-rt-14-dev
)

missing=()
# Installed means dpkg's status "ii" (a removed package whose configuration stayed is "rc").
for p in "${packages[@]}"; do
  dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii' || missing+=("$p")
done
if [ "${1:-}" = "--check" ]; then
  [ ${#missing[@]} -eq 0 ] || { echo "missing packages: ${missing[*]}"; exit 1; }
  exit 0
fi
mkdir -p build
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" != 0 ]; then
  echo "missing packages: ${missing[*]}; as root: apt-get install ${missing[*]}" >&2
  exit 1
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]} (log: build/setup.log)"
  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"; } > build/setup.log 2>&1 ||
    { tail -20 build/setup.log >&2; echo "apt-get install failed: build/setup.log has the whole output" >&2; exit 1; }
fi
[ "${1:-}" = "--install" ] && exit 0

echo "building build/attn-trace (log: build/build.log)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTN_TRACE_CUDA="${ATTN_TRACE_CUDA:-OFF}" \
  -DATTN_TRACE_WERROR="${ATTN_TRACE_WERROR:-OFF}" > build/build.log 2>&1 &&
  cmake --build build >> build/build.log 2>&1 ||
  { tail -40 build/build.log >&2; echo "the build failed: build/build.log has the whole output" >&2; exit 1; }
echo
./build/attn-trace run examples/damaged_on_arrival.json --mask causal --steps scores,scaled,masked,weights,out
