#!/usr/bin/env bash
# Runs the whole test suite: builds (installing what is missing) and runs ctest.
# Usage: bash tools/test.sh                 the Release build
#        SANITIZE=1 bash tools/test.sh      a second build under ASan + UBSan, every test but
#                                           the Python package's (an instrumented extension
#                                           does not load into an uninstrumented python)
#        SANITIZE=thread bash tools/test.sh a third under ThreadSanitizer: the tests of
#                                           the code that runs threads ([fast], [threads])
# CC=clang CXX=clang++ chooses the compiler of a build's first configuration (CI builds
# the sanitizer build with clang); ATTN_TRACE_WERROR=ON makes warnings errors (CI).
set -euo pipefail
cd "$(dirname "$0")/.."

# The packages are tools/setup.sh's one list; it installs what is missing.
bash tools/setup.sh --check >/dev/null || bash tools/setup.sh --install
werror=(-DATTN_TRACE_WERROR="${ATTN_TRACE_WERROR:-OFF}")
# CMake reads CXX only when it first configures a folder: a folder made with another
# compiler is made again, so that CXX=clang++ is never quietly a GCC build.
fresh_for_compiler() {
  local dir=$1 cache=$1/CMakeCache.txt
  [ -n "${CXX:-}" ] && [ -f "$cache" ] || return 0
  grep -q "^CMAKE_CXX_COMPILER:.*=$(command -v "$CXX")\$" "$cache" || { echo "$dir was configured with another compiler: configuring it again with $CXX"; rm -rf "$dir"; }
}
case "${SANITIZE:-0}" in
  1)
    dir=build-sanitize
    fresh_for_compiler "$dir"
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DATTN_TRACE_SANITIZE=ON "${werror[@]}" >/dev/null ;;
  thread)
    # Only the unit tests: the CLI scripts and fuzz replays run no threads of their own.
    # OpenBLAS (bench's naive baseline) is not built with TSan: one thread keeps it
    # from reporting its own workers.
    dir=build-tsan
    fresh_for_compiler "$dir"
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTN_TRACE_TSAN=ON "${werror[@]}" >/dev/null
    cmake --build "$dir" --target attn_trace_tests
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" OPENBLAS_NUM_THREADS=1 "$dir/tests/attn_trace_tests" "[fast],[threads]"
    exit ;;
  *)
    # The Release build also builds the Python extension, and ctest runs pytest over it
    # (python/tests), in a virtual environment of Debian's python3 that holds the
    # package's build and test requirements from PyPI (docs/PYTHON.md#tests).
    dir=build
    fresh_for_compiler "$dir"
    venv=$dir/python-venv
    [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check nanobind numpy pytest nbclient nbformat ipykernel junitparser
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTN_TRACE_PYTHON=ON -DPython_EXECUTABLE="$PWD/$venv/bin/python" "${werror[@]}" >/dev/null ;;
esac
cmake --build "$dir"
ctest --test-dir "$dir" --output-on-failure -j2
