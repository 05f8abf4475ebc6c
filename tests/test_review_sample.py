"""benchmarks/review_sample.py: reviewed findings scored against a new report, by class."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "review_sample.py"
SRC = "/home/u/.cache/tfnumlint-wild/src"


def _finding(path: str, line: int, rule: str, status: str, related: list[str] | None = None):
    out = {"path": f"{SRC}/{path}", "line": line, "rule": rule, "verification": {"status": status}}
    if related:
        out["related_rules"] = related
    return out


def _label(path: str, line: int, rule: str, kind: str) -> dict:
    package, rest = path.split("/", 1)
    verdict = {"precondition": "PRECONDITION", "wrong": "WRONG"}.get(kind, "REAL")
    return {"package": package, "path": rest, "line": line, "rule": rule, "verdict": verdict,
            "kind": kind}  # fmt: skip


def test_labels_are_scored_by_class_and_status_including_merged_rules(tmp_path):
    report = {
        "findings": [
            _finding("pkg/a.py", 3, "TNL102", "confirmed", related=["TNL103"]),
            _finding("pkg/b.py", 7, "TNL201", "inconclusive"),
            _finding("pkg/c.py", 9, "TNL301", "refuted"),
        ]
    }
    labels = [
        _label("pkg/a.py", 3, "TNL103", "harmful"),  # merged into the TNL102 finding
        _label("pkg/b.py", 7, "TNL201", "precondition"),
        _label("pkg/c.py", 9, "TNL301", "wrong"),
        _label("pkg/d.py", 1, "TNL201", "wrong"),  # no longer reported at all
    ]
    (tmp_path / "r.json").write_text(json.dumps(report))
    (tmp_path / "l.json").write_text(json.dumps(labels))
    out = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "r.json"), "--labels", str(tmp_path / "l.json")],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()}
    assert rows == {
        "harmful": ["confirmed=1"],
        "precondition": ["inconclusive=1"],
        "wrong": ["absent=1", "refuted=1"],
    }


def test_a_place_folded_into_another_finding_is_still_shown(tmp_path):
    """A symptom that starts in one finding and carries on to another line is one finding
    listing the other place: a kept hazard at that place is not lost."""
    upstream = _finding("pkg/g.py", 359, "TNL206", "confirmed", related=["TNL201"])
    upstream["related"] = [
        {"path": f"{SRC}/pkg/g.py", "line": 360, "rule": "TNL201"},
        {"path": f"{SRC}/pkg/h.py", "line": 12, "message": "`s` = `s` passed here"},  # a call site
    ]
    (tmp_path / "r.json").write_text(json.dumps({"findings": [upstream]}))
    kept = [
        _label("pkg/g.py", 360, "TNL201", "metric"),
        _label("pkg/g.py", 361, "TNL201", "metric"),
    ]
    (tmp_path / "k.json").write_text(json.dumps(kept))
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "r.json"), "--check-kept", str(tmp_path / "k.json")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.stdout.splitlines() == [
        "LOST pkg/g.py:361 TNL201 (metric)",
        "k.json: kept 1, lost 1",
    ]


def test_several_kept_lists_are_checked_each_on_its_own(tmp_path):
    shown = _finding("pkg/g.py", 10, "TNL201", "confirmed")
    (tmp_path / "r.json").write_text(json.dumps({"findings": [shown]}))
    (tmp_path / "a.json").write_text(json.dumps([_label("pkg/g.py", 10, "TNL201", "harmful")]))
    (tmp_path / "b.json").write_text(json.dumps([_label("pkg/g.py", 11, "TNL201", "harmful")]))
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "r.json"), "--check-kept",
         str(tmp_path / "a.json"), str(tmp_path / "b.json")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "a.json: kept 1, lost 0",
        "LOST pkg/g.py:11 TNL201 (harmful)",
        "b.json: kept 0, lost 1",
    ]
