"""The JSON fix descriptions plan only the files where the report shows a finding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfnumlint import cli
from tfnumlint.fix import apply
from tfnumlint.model import Verification

SOURCE = "import tensorflow as tf\n\n\ndef f(z):\n    return tf.math.log(tf.sigmoid(z))\n"


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, *extra: str):
    """JSON run over a.py and b.py (the same code) where b.py's verdicts are refuted: the
    findings shown, and the files the fix descriptions were asked to plan."""
    (tmp_path / "a.py").write_text(SOURCE)
    (tmp_path / "b.py").write_text(SOURCE)

    def verdicts(findings, config, cache_dir, jobs):
        for f in findings:
            status = "refuted" if f.path.endswith("b.py") else "confirmed"
            f.verification = Verification(status=status, detail="set by the test")
        return []

    planned: set[str] = set()
    describe = apply.describe_fixes

    def spy(findings, *args, **kwargs):
        planned.update(f.path for f in findings)
        return describe(findings, *args, **kwargs)

    monkeypatch.setattr(cli, "_verify", verdicts)
    monkeypatch.setattr(apply, "describe_fixes", spy)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert cli.main(["--no-cache", "--exit-zero", "--format", "json", *extra, "."]) == 0
    shown = json.loads(capsys.readouterr().out)["findings"]
    return shown, {Path(p).name for p in planned}


def test_a_file_whose_findings_are_all_refuted_is_not_planned(tmp_path, monkeypatch, capsys):
    shown, planned = run(tmp_path, monkeypatch, capsys)
    assert {Path(f["path"]).name for f in shown} == {"a.py"}
    assert all(f["fix"] and f["fix"]["edits"] for f in shown)
    assert planned == {"a.py"}


def test_with_show_refuted_both_files_get_their_fixes(tmp_path, monkeypatch, capsys):
    shown, planned = run(tmp_path, monkeypatch, capsys, "--show-refuted")
    assert {Path(f["path"]).name for f in shown} == {"a.py", "b.py"}
    assert planned == {"a.py", "b.py"}
    by_file = {Path(f["path"]).name: f["fix"] for f in shown}
    assert by_file["a.py"]["edits"] == by_file["b.py"]["edits"]  # the same code, the same fix
