"""The on-disk cache: hits are served, changes invalidate, damage is ignored, runs can share it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import run_cli, run_json

from tfnumlint.cache import Cache, key

RISKY = """\
import tensorflow as tf

def loss(logits):
    p = tf.nn.softmax(logits)
    return -tf.reduce_sum(tf.math.log(p))
"""
SAFE = """\
import tensorflow as tf

def loss(logits):
    return -tf.reduce_sum(tf.nn.log_softmax(logits))
"""


def _entries(cache_dir: Path) -> list[Path]:
    return sorted(p for p in cache_dir.rglob("*.json") if not p.name.startswith(".tmp"))


def _lint(tmp_path: Path, cache_dir: Path, *extra: str) -> dict:
    return run_json(
        "--no-verify",
        "--exit-zero",
        *extra,
        ".",
        cwd=tmp_path,
        env={"TFNUMLINT_CACHE_DIR": str(cache_dir)},
    )


def test_second_run_is_served_from_the_cache(tmp_path):
    (tmp_path / "m.py").write_text(RISKY)
    cache_dir = tmp_path.parent / f"{tmp_path.name}-cache"
    first = _lint(tmp_path, cache_dir)
    assert [f["rule"] for f in first["findings"]] == ["TNL101"]
    entries = _entries(cache_dir / "static")
    assert entries, "the first run wrote no cache entry"
    # Tamper with the entry in a well-formed way: a served hit shows the tampered message.
    for entry in entries:
        data = json.loads(entry.read_text())
        for f in data["value"]["findings"]:
            f["message"] = "FROM CACHE"
        entry.write_text(json.dumps(data))
    second = _lint(tmp_path, cache_dir)
    assert [f["message"] for f in second["findings"]] == ["FROM CACHE"]


def test_fix_descriptions_are_cached_with_the_findings(tmp_path):
    """A warm JSON run reads each file's fixes from the cache instead of planning them again;
    a changed file gets fresh ones."""
    target = tmp_path / "m.py"
    target.write_text(RISKY)
    cache_dir = tmp_path.parent / f"{tmp_path.name}-cache"
    first = _lint(tmp_path, cache_dir)
    fix = first["findings"][0]["fix"]
    assert fix is not None and fix["replacement"]
    entries = _entries(cache_dir / "fixes")
    assert len(entries) == 1
    assert _lint(tmp_path, cache_dir)["findings"][0]["fix"] == fix
    data = json.loads(entries[0].read_text())
    data["value"]["fixes"][0]["message"] = "FROM CACHE"
    entries[0].write_text(json.dumps(data))
    assert _lint(tmp_path, cache_dir)["findings"][0]["fix"]["message"] == "FROM CACHE"
    target.write_text(RISKY + "\n")
    assert _lint(tmp_path, cache_dir)["findings"][0]["fix"]["message"] == fix["message"]


def test_a_changed_file_is_re_analysed(tmp_path):
    target = tmp_path / "m.py"
    target.write_text(RISKY)
    cache_dir = tmp_path.parent / f"{tmp_path.name}-cache"
    assert _lint(tmp_path, cache_dir)["findings"]
    target.write_text(SAFE)
    assert _lint(tmp_path, cache_dir)["findings"] == []
    target.write_text(RISKY)
    assert [f["rule"] for f in _lint(tmp_path, cache_dir)["findings"]] == ["TNL101"]


def test_a_config_change_invalidates_the_cache(tmp_path):
    (tmp_path / "train.py").write_text(
        "import tensorflow as tf\n"
        "out = tf.keras.layers.Dense(1, activation='sigmoid')\n"
        "def loss(y, p):\n"
        "    return -tf.reduce_mean(y * tf.math.log(tf.clip_by_value(p, 1e-7, 1 - 1e-7)))\n"
        "opt = tf.keras.optimizers.Adam(learning_rate=0.002, clipnorm=1.0)\n"
    )
    cache_dir = tmp_path.parent / f"{tmp_path.name}-cache"
    assert _lint(tmp_path, cache_dir)["findings"] == []
    (tmp_path / "pyproject.toml").write_text(
        "[tool.tfnumlint.learning-rate-thresholds]\nadam = 0.001\n"
    )
    rules = [f["rule"] for f in _lint(tmp_path, cache_dir)["findings"]]
    assert rules == ["TNL501"]
    (tmp_path / "pyproject.toml").write_text("[tool.tfnumlint]\nignore = ['TNL5']\n")
    assert _lint(tmp_path, cache_dir)["findings"] == []


def test_corrupt_and_truncated_entries_are_ignored(tmp_path):
    (tmp_path / "m.py").write_text(RISKY)
    cache_dir = tmp_path.parent / f"{tmp_path.name}-cache"
    expected = _lint(tmp_path, cache_dir)["findings"]
    entries = _entries(cache_dir)
    assert entries
    for i, entry in enumerate(entries):
        text = entry.read_bytes()
        entry.write_bytes(text[: len(text) // 2] if i % 2 == 0 else b"\x00garbage{")
    assert _lint(tmp_path, cache_dir)["findings"] == expected
    # a well-formed entry for the wrong key is a miss too
    for entry in _entries(cache_dir):
        entry.write_text(
            json.dumps({"key": "not-this-one", "value": {"findings": [], "errors": []}})
        )
    assert _lint(tmp_path, cache_dir)["findings"] == expected


def test_missing_and_read_only_cache_directories_still_work(tmp_path):
    (tmp_path / "m.py").write_text(RISKY)
    missing = tmp_path.parent / f"{tmp_path.name}-does-not-exist" / "deeper"
    assert [f["rule"] for f in _lint(tmp_path, missing)["findings"]] == ["TNL101"]
    # A cache "directory" that is a regular file cannot be written, even by root.
    blocked = tmp_path.parent / f"{tmp_path.name}-blocked"
    blocked.write_text("not a directory")
    proc = run_cli(
        "--no-verify",
        "--format",
        "json",
        ".",
        cwd=tmp_path,
        env={"TFNUMLINT_CACHE_DIR": str(blocked)},
    )
    assert proc.returncode == 1, proc.stderr
    assert [f["rule"] for f in json.loads(proc.stdout)["findings"]] == ["TNL101"]
    assert "Traceback" not in proc.stderr


def test_cache_put_is_a_no_op_on_an_unwritable_directory(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("x")
    cache = Cache(blocked, "static")
    cache.put(key("a"), {"v": 1})  # must not raise
    assert cache.get(key("a")) is None


def test_two_concurrent_runs_share_one_cache(tmp_path):
    for i in range(12):
        (tmp_path / f"m{i}.py").write_text(RISKY if i % 2 else SAFE)
    cache_dir = tmp_path.parent / f"{tmp_path.name}-shared"
    env = dict(os.environ, TFNUMLINT_CACHE_DIR=str(cache_dir))
    cmd = [sys.executable, "-m", "tfnumlint", "--no-verify", "--format", "json", "--exit-zero", "."]
    procs = [
        subprocess.Popen(
            cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    reports = [json.loads(out) for out, _ in outs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    assert reports[0]["findings"] == reports[1]["findings"]
    assert len(reports[0]["findings"]) == 6
    again = _lint(tmp_path, cache_dir)
    assert again["findings"] == reports[0]["findings"]
    assert not list(cache_dir.rglob(".tmp-*")), "a temporary file was left behind"


def test_a_finding_written_by_another_build_still_reads():
    """A verdict with a field this build does not know (a newer tool's, or a worker started
    after an upgrade) is read without it, instead of stopping the run with a TypeError."""
    from tfnumlint.model import Finding

    data = {
        "path": "a.py", "line": 1, "column": 1, "end_line": 1, "end_column": 2,
        "rule": "TNL101", "name": "log-of-probability", "severity": "error", "message": "m",
        "verification": {"status": "confirmed", "detail": "d", "a_later_field": [1]},
    }  # fmt: skip
    finding = Finding.from_json(data)
    assert finding.verification.status == "confirmed"
    assert finding.verification.detail == "d"
    assert not hasattr(finding.verification, "a_later_field")
