"""benchmarks/compare_reports.py: two JSON reports, compared finding by finding."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

from conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "compare_reports.py"


def _finding(line: int, rule: str = "TNL101", status: str = "confirmed") -> dict:
    return {
        "path": "a.py",
        "line": line,
        "column": 5,
        "end_line": line,
        "end_column": 20,
        "rule": rule,
        "message": f"{rule} at {line}",
        "verification": {"status": status, "detail": "x", "seconds": 0.5},
        "fix": None,
    }


REPORT = {
    "version": 1,
    "findings": [_finding(3), _finding(3, "TNL103"), _finding(9)],
    "errors": [],
    "summary": {"files": 1, "findings": 3, "seconds": 1.2},
}


def _compare(tmp_path, before: dict, after: dict) -> subprocess.CompletedProcess:
    a, b = tmp_path / "before.json", tmp_path / "after.json"
    a.write_text(json.dumps(before))
    b.write_text(json.dumps(after))
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(a), str(b)], capture_output=True, text=True, check=False
    )


def test_identical_reports_match_whatever_the_timings(tmp_path):
    after = copy.deepcopy(REPORT)
    after["summary"]["seconds"] = 9.9
    after["findings"][0]["verification"]["seconds"] = 3.0
    proc = _compare(tmp_path, REPORT, after)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == "IDENTICAL: 3 finding(s), every field equal"


def test_a_nan_in_both_reports_is_equal_and_a_nan_against_a_number_differs(tmp_path):
    """json reads NaN as a float that is unequal to itself: a NaN loss must still match."""
    before = copy.deepcopy(REPORT)
    before["findings"][0]["verification"]["observed"] = {"loss": float("nan")}
    proc = _compare(tmp_path, before, copy.deepcopy(before))
    assert proc.returncode == 0, proc.stdout
    after = copy.deepcopy(before)
    after["findings"][0]["verification"]["observed"] = {"loss": 2.5}
    proc = _compare(tmp_path, before, after)
    assert "a.py:3:5 TNL101 verification.observed.loss: NaN -> 2.5" in proc.stdout.splitlines()


def test_a_changed_field_and_a_lost_finding_are_named(tmp_path):
    after = copy.deepcopy(REPORT)
    after["findings"][1]["verification"]["status"] = "refuted"
    after["findings"][1]["fix"] = {"applicability": "safe", "replacement": "tf.nn.log_softmax(z)"}
    del after["findings"][2]
    proc = _compare(tmp_path, REPORT, after)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert 'a.py:3:5 TNL103 verification.status: "confirmed" -> "refuted"' in lines
    assert "a.py:3:5 TNL103 fix: null -> " + json.dumps(after["findings"][1]["fix"]) in lines
    assert "only before: a.py:9:5 TNL101 TNL101 at 9" in lines
    assert lines[-1].startswith("DIFFERENT: ")


def test_repeated_findings_are_told_apart_by_their_order(tmp_path):
    before = dict(REPORT, findings=[_finding(3), _finding(3)])
    after = copy.deepcopy(before)
    after["findings"][1]["message"] = "changed"
    proc = _compare(tmp_path, before, after)
    assert proc.returncode == 1
    assert 'a.py:3:5 TNL101 (#2) message: "TNL101 at 3" -> "changed"' in proc.stdout
