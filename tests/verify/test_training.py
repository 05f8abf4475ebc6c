"""Training-configuration probes: real optimizer steps, verdicts from what they show."""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from tfnumlint.verify import probing, training  # noqa: E402


def train_probe(rule, **kw):
    base = {"kind": "train", "rule": rule, "dtype": "float32", "path": "m.py", "line": 1,
            "optimizer": "adam", "tf1": False, "learning_rate": 1e-3, "epsilon": None,
            "clipnorm": None, "output": "sigmoid", "loss_eps": None}  # fmt: skip
    return {**base, **kw}


def test_float16_adam_with_tiny_epsilon_goes_nan():
    out = probing.verify(train_probe("TNL403", dtype="float16", epsilon=1e-8), 1e6)
    assert (out["status"], out["symptom"]) == ("confirmed", "nan-value")
    assert "float16" in out["detail"] and "epsilon 1e-4 they stay finite" in out["detail"]


def test_tf1_adam_default_epsilon_in_float16_goes_nan():
    out = probing.verify(train_probe("TNL403", dtype="float16", tf1=True), 1e6)
    assert out["status"] == "confirmed"


def test_float16_adam_with_safe_epsilon_is_refuted():
    out = probing.verify(train_probe("TNL403", dtype="float16", epsilon=1e-4), 1e6)
    assert out["status"] == "refuted"


def test_learning_rate_probe_never_confirms_without_a_difference():
    out = probing.verify(train_probe("TNL501", learning_rate=1e-3, loss_eps=1e-10), 1e6)
    assert out["status"] == "inconclusive"  # same run as the control: cannot tell apart
    assert "cannot tell" in out["detail"]


def test_compare_confirms_only_when_the_control_is_healthy():
    cfg = training.Config("adam", False, 0.01, None, None)
    safe = training.Config("adam", False, 0.001, None, None)
    dead = training.Outcome(dead=3, dead_loss=23.03, dead_logit=20.0)
    fine = training.Outcome()
    probe = train_probe("TNL501")
    assert (
        training.compare(probe, cfg, safe, dead, fine, "sigmoid", "float32")["status"]
        == "confirmed"
    )
    assert (
        training.compare(probe, cfg, safe, dead, dead, "sigmoid", "float32")["status"]
        == "inconclusive"
    )
    assert (
        training.compare(probe, cfg, safe, fine, fine, "sigmoid", "float32")["status"]
        == "inconclusive"
    )


def test_training_probe_is_quick():
    out = probing.verify(train_probe("TNL502", learning_rate=0.01, loss_eps=1e-10), 1e6)
    assert out["seconds"] < 3.0
    assert out["status"] in ("confirmed", "inconclusive")
