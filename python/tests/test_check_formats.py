"""check's JUnit report read by a real consumer, junitparser from PyPI (docs/COMMANDS.md
#checks-that-ci-reads): its tests, failures and errors are the text's closing line's, each
file a testcase with its time, a failed file's failure holding the text's lines."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import junitparser

import attn_trace

SOURCE = Path(os.environ.get("SOURCE_DIR", Path(__file__).resolve().parents[2]))
BINARY = os.environ.get("ATTN_TRACE", str(SOURCE / "build" / "attn-trace"))


def test_junit_counts_equal_the_text(tmp_path: Path) -> None:
    (tmp_path / "wrong.json").write_text('{"Q": [[1]], "K": [[1]], "V": [[2]], "expect": [{"name": "out", "data": [[3]]}]}')
    (tmp_path / "bad.json").write_text('{"Q": [[1]]')
    files = [str(SOURCE / "examples" / "softmax_2_0_0.json"), str(SOURCE / "examples" / "damaged_on_arrival.json"),
             str(tmp_path / "wrong.json"), str(tmp_path / "bad.json")]
    xml = tmp_path / "check.xml"
    text = subprocess.run([BINARY, "check", *files, "--junit", str(xml)], capture_output=True, text=True)
    assert text.returncode == 2, text.stderr
    passed, failed = map(int, re.fullmatch(r"(\d+) passed, (\d+) failed", text.stdout.splitlines()[-1]).groups())
    report = junitparser.JUnitXml.fromfile(str(xml))
    assert isinstance(report, junitparser.JUnitXml)  # the root is testsuites
    assert report.name == "attn-trace check"
    assert (report.tests, report.failures + report.errors) == (passed + failed, failed) == (4, 2)
    assert (report.failures, report.errors) == (1, 1)
    cases = [case for suite in report for case in suite]
    assert [case.name for case in cases] == files
    assert [case.classname for case in cases] == ["attn-trace.check.run"] * 3 + ["attn-trace.check"]
    assert all(case.time >= 0 for case in cases)
    failure = cases[2].result[0]
    assert isinstance(failure, junitparser.Failure) and failure.message == "steps that differ: 1 of 1"
    assert "out: 1 of 1 values differ" in failure.text
    assert isinstance(cases[3].result[0], junitparser.Error) and "malformed JSON" in cases[3].result[0].message
    # --format junit writes the same document to standard output.
    same = subprocess.run([BINARY, "check", *files, "--format", "junit"], capture_output=True, text=True)
    assert same.returncode == 2
    assert re.sub(r'time="[0-9.]+"', "", same.stdout) == re.sub(r'time="[0-9.]+"', "", xml.read_text())


def test_decimals_from_python(tmp_path: Path) -> None:
    """check(decimals=2): a student's answers to 2 decimals (worked by hand: softmax([1, 0]) =
    (0.7311, 0.2689) → 0.73, 0.27) pass, a wrong digit fails."""
    problem = '{"Q": [[1, 0], [0, 1]], "K": [[1, 0], [0, 1]], "V": [[1, 2], [3, 4]], "scale": "none", "expect": [%s]}'
    (tmp_path / "right.json").write_text(problem % '{"name": "weights", "data": [[0.73, 0.27], [0.27, 0.73]]}')
    (tmp_path / "wrong.json").write_text(problem % '{"name": "weights", "data": [[0.73, 0.27], [0.28, 0.73]]}')
    assert attn_trace.check(tmp_path / "right.json", decimals=2)
    assert not attn_trace.check(tmp_path / "right.json")  # 1e-4 by default
    assert not attn_trace.check(tmp_path / "wrong.json", decimals=2)
