"""What the tests that open a page in headless chromium share: Debian's python3, which
holds Debian's selenium, runs a script of tests/browser/ (tests/browser/chromium.py);
skipped where it or chromium is missing, unless ATTN_TRACE_REQUIRE_BROWSER=1 (CI)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SOURCE = Path(os.environ.get("SOURCE_DIR", Path(__file__).resolve().parents[2]))
BROWSER_PYTHON = "/usr/bin/python3"


def run_browser_script(script: str, *args: str) -> None:
    """tests/browser/SCRIPT ARGS…: passes, fails with its output, or skips (exit 77)."""
    if shutil.which(BROWSER_PYTHON) is None:
        skip_unless_required(f"{BROWSER_PYTHON} is missing: the browser check needs Debian's python3 and its python3-selenium")
    result = subprocess.run([BROWSER_PYTHON, str(SOURCE / "tests" / "browser" / script), *args], capture_output=True, text=True, timeout=300)
    if result.returncode == 77:
        skip_unless_required(result.stdout.strip())
    assert result.returncode == 0, result.stdout + result.stderr


def skip_unless_required(reason: str) -> None:
    if os.environ.get("ATTN_TRACE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason}; ATTN_TRACE_REQUIRE_BROWSER=1 asks for the browser check")
    pytest.skip(reason)
