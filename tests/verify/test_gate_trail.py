"""Issue 22: the gates a verdict passes are one ordered list, and each appends its step to the
trail JSON shows: the status after it, and why when it changed the status."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")

from conftest import run_json

from tfnumlint.verify.probing import EXPR_GATES

USE_ONLY = """\
import tensorflow as tf


def generator_loss(a):
    return -tf.reduce_mean(tf.math.log(a))


def squashed_loss(logits):
    return -tf.reduce_mean(tf.math.log(1.0 - tf.sigmoid(logits)))
"""


@pytest.fixture(scope="module")
def findings(tmp_path_factory):
    root = tmp_path_factory.mktemp("trail")
    (root / "losses.py").write_text(USE_ONLY)
    report = run_json("--no-cache", "--exit-zero", "--select", "TNL101", str(root / "losses.py"))
    return {f["line"]: f["verification"] for f in report["findings"]}


def test_the_trail_lists_every_gate_in_order(findings):
    for verification in findings.values():
        names = [step["gate"] for step in verification["trail"]]
        assert names == ["witness search", *(g.name for g in EXPR_GATES)], names
        assert verification["trail"][-1]["status"] == verification["status"]


def test_the_gate_that_changes_a_status_says_why(findings):
    used = findings[5]  # log(a) in -mean(log(a)): a probability only by its use
    assert used["status"] == "inconclusive"
    changed = [step for step in used["trail"] if "why" in step]
    assert [step["gate"] for step in changed] == ["reachability"], used["trail"]
    assert changed[0]["why"] == used["detail"].split(" (seen: ")[0]
    assert changed[0]["why"].startswith("conditional: only its use says `a` is a probability")


def test_a_verdict_no_gate_changes_has_no_reasons(findings):
    squashed = findings[9]  # log(1 - sigmoid(z)): confirmed at z = 17, inside the band
    assert squashed["status"] == "confirmed", squashed
    assert all(step["status"] == "confirmed" for step in squashed["trail"])
    assert not [step for step in squashed["trail"] if "why" in step]
