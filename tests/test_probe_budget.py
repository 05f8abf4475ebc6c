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


def test_a_probe_that_trains_is_given_its_share_before_its_worker_is_stopped(monkeypatch) -> None:
    """The worker is stopped past a request's own budget: the probe budget, or, for a probe
    that trains the program's slice, that budget and ``TRAINING_BUDGETS`` more of it."""
    import pytest

    pytest.importorskip("tensorflow")
    monkeypatch.setenv("TFNUMLINT_TEST_FAULT", "hang:TNL101")
    monkeypatch.setattr(runner, "GRACE", 0.5)
    plain = {"probe": {"kind": "expr", "rule": "TNL101"}}
    trains = {"probe": {"kind": "expr", "rule": "TNL101", "program": {"loss": {}}}}
    reasons: list[str] = []
    runner.serve([plain, trains], lambda reason, i: reasons.append(reason) or {}, timeout=0.5)
    total = 0.5 * (1 + runner.TRAINING_BUDGETS)
    assert reasons == [
        "probe exceeded its 0.5 s budget (--probe-timeout sets it)",
        f"probe exceeded its {total:g} s budget (--probe-timeout sets it)",
    ]
