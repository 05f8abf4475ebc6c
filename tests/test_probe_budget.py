"""``--probe-timeout SECONDS`` (or ``TFNUMLINT_PROBE_TIMEOUT``): how long one finding's
verification may take.  A verdict made under one budget is not another's (a training run a
short budget stopped is 'finite so far'), so the budget is part of the verdict cache key, and
the flag reaches the TensorFlow workers through the environment they inherit."""

from __future__ import annotations

import os

from tfnumlint import cli
from tfnumlint.config import Settings
from tfnumlint.verify import runner


def test_the_budget_is_part_of_the_verdict_cache_key(monkeypatch) -> None:
    probe = {"kind": "expr", "rule": "TNL101", "target": {"k": "input", "name": "p"}}
    monkeypatch.setenv("TFNUMLINT_PROBE_TIMEOUT", "10")
    short = runner.cache_key(probe, "v", Settings())
    assert runner.cache_key(probe, "v", Settings()) == short
    monkeypatch.setenv("TFNUMLINT_PROBE_TIMEOUT", "60")
    assert runner.cache_key(probe, "v", Settings()) != short


def test_the_flag_sets_the_budget_the_workers_read(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("TFNUMLINT_PROBE_TIMEOUT", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.py").write_text("x = 1\n")
    assert cli.main(["--no-verify", "--quiet", "--probe-timeout", "45", "ok.py"]) == 0
    assert runner.probe_timeout() == 45.0 and os.environ["TFNUMLINT_PROBE_TIMEOUT"] == "45.0"
