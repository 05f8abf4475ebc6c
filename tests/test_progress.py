"""Progress on stderr: shown on a terminal (a real pty here), never in pipes, hidden by --quiet."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading

import pytest

from tfnumlint import progress
from tfnumlint.progress import Progress

RISKY = """\
import tensorflow as tf


def loss(p_pred):
    return -tf.reduce_mean(tf.math.log(p_pred + 1e-10))
"""


@pytest.fixture
def project(tmp_path):
    for i in range(25):
        (tmp_path / f"m{i:02d}.py").write_text(RISKY)
    return tmp_path


def run_with_stderr_on_a_pty(args: list[str], cwd) -> tuple[int, str, str]:
    """(exit code, stdout through a pipe, everything written to the pty standing in for stderr)."""
    master, slave = pty.openpty()
    env = dict(os.environ, TFNUMLINT_CACHE_DIR=str(cwd / ".cache"), TERM="xterm")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tfnumlint", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: the child closed its end
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain)
    reader.start()
    stdout, _ = proc.communicate(timeout=300)
    reader.join(timeout=30)
    os.close(master)
    return proc.returncode, stdout.decode(), b"".join(chunks).decode(errors="replace")


def test_progress_is_shown_on_a_terminal(project):
    code, stdout, stderr = run_with_stderr_on_a_pty(["--no-verify", "--jobs", "1", "."], project)
    assert code == 1
    assert "tfnumlint: analysing 0/25 files" in stderr
    assert "tfnumlint: analysing 25/25 files" in stderr
    assert stderr.endswith("\r")  # the line is cleared at the end
    assert "analysing" not in stdout  # the report itself is untouched
    assert stdout.count("TNL102 [warning]") == 25


def test_quiet_hides_progress_on_a_terminal(project):
    code, stdout, stderr = run_with_stderr_on_a_pty(
        ["--no-verify", "--jobs", "1", "--quiet", "."], project
    )
    assert code == 1
    assert stderr == ""
    assert stdout.count("TNL102 [warning]") == 25


def test_no_progress_when_stderr_is_not_a_terminal(project):
    proc = subprocess.run(
        [sys.executable, "-m", "tfnumlint", "--no-verify", "--jobs", "1", "."],
        cwd=project,
        capture_output=True,
        text=True,
        env=dict(os.environ, TFNUMLINT_CACHE_DIR=str(project / ".cache")),
        timeout=300,
    )
    assert proc.returncode == 1
    assert proc.stderr == ""


def test_progress_line_has_counts_stage_elapsed_and_estimate(monkeypatch):
    clock = iter([100.0, 130.0])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(progress, "_enabled", True)
    bar = Progress(40, "verifying", "findings")
    bar.done = 10
    assert bar.line() == "tfnumlint: verifying 10/40 findings · 0:30 · ~1:30 left"


def test_progress_without_a_total_shows_stage_and_elapsed(monkeypatch):
    clock = iter([0.0, 65.0])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    assert Progress(None, "proving fixes").line() == "tfnumlint: proving fixes · 1:05"


def test_small_runs_and_disabled_progress_draw_nothing(monkeypatch, capsys):
    monkeypatch.setattr(progress, "_enabled", True)
    with Progress(3, "analysing", "files", minimum=20) as bar:
        bar.update(3)
    monkeypatch.setattr(progress, "_enabled", False)
    with Progress(100, "analysing", "files") as bar:
        bar.update(50)
    assert capsys.readouterr().err == ""
