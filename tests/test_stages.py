"""--profile: the stage table a user reads to see why a tree is slow."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfnumlint import stages

ROOT = Path(__file__).resolve().parent.parent


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(stages.time, "perf_counter", fake)
    monkeypatch.setattr(stages.time, "process_time", fake)
    monkeypatch.setattr(stages, "_on", True)
    stages.take()
    stages._merged.clear()
    yield fake
    stages.take()
    stages._merged.clear()


def test_time_goes_to_the_innermost_stage(clock: FakeClock) -> None:
    with stages.stage("rules"):
        clock.now += 1.0
        with stages.stage("provenance"):
            clock.now += 5.0
        clock.now += 2.0
    assert stages.take() == {"rules": (3.0, 3.0), "provenance": (5.0, 5.0)}


def test_a_wrapped_function_is_charged_on_each_call(clock: FakeClock) -> None:
    def evaluate(x: int) -> int:
        clock.now += 0.5
        return x + 1

    timed = stages.timed("provenance", evaluate)
    with stages.stage("rules"):
        assert timed(timed(1)) == 3
    assert stages.take() == {"rules": (0.0, 0.0), "provenance": (1.0, 1.0)}


def test_worker_totals_are_added_to_the_table(clock: FakeClock) -> None:
    with stages.stage("parse"):
        clock.now += 1.0
    stages.merge({"parse": (3.0, 2.0), "metadata": (1.0, 1.0)})
    table = stages.table(10.0)
    rows = {line.split()[0]: line.split()[1:] for line in table.splitlines()[2:]}
    assert rows["parse"] == ["4.00", "3.00", "75.0%"]
    assert rows["metadata"] == ["1.00", "1.00", "25.0%"]
    assert table.index("parse") < table.index("metadata")  # pipeline order


def test_off_nothing_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stages, "_on", False)
    stages.take()
    with stages.stage("parse"):
        pass
    assert stages.take() == {}


@pytest.mark.parametrize("how", ["flag", "env"])
def test_profile_prints_the_stage_table_on_stderr(how: str, tmp_path: Path) -> None:
    env = dict(os.environ, TFNUMLINT_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "tfnumlint", "--no-verify", "--no-cache", "--format", "json"]
    if how == "flag":
        cmd.append("--profile")
    else:
        env["TFNUMLINT_PROFILE"] = "1"
    proc = subprocess.run(
        [*cmd, str(ROOT / "examples")], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert proc.returncode == 1, proc.stderr  # the examples have findings
    assert proc.stdout.lstrip().startswith("{")  # the report itself is untouched
    names = {line.split()[0] for line in proc.stderr.splitlines() if line.startswith("  ")}
    assert {"parse", "metadata", "provenance", "rules", "summary", "total"} <= names


def test_without_profile_stderr_has_no_table(tmp_path: Path) -> None:
    env = dict(os.environ, TFNUMLINT_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    env.pop("TFNUMLINT_PROFILE", None)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfnumlint",
            "--no-verify",
            "--no-cache",
            "-q",
            str(ROOT / "examples"),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert "tfnumlint profile" not in proc.stderr
