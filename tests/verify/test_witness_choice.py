"""Which witness is reported: among points showing a gradient symptom, one where the enclosing
statement's own gradient suffers too, so the witness shows what the user's loss sees."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

tf = pytest.importorskip("tensorflow")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from test_reachability import probed  # noqa: E402

from tfnumlint.verify import probing  # noqa: E402

# A hand-written binary cross-entropy is no fixture here: `log(1 - p + eps)` makes `p` a
# probability by its use, which the verifier drives through its logit (a saturated sigmoid
# gives a dead gradient, not an exploding one).  A rate is no probability: the log of a rate
# explodes at 0, and a label weights that term.
LOSSES = """\
    import tensorflow as tf


    def poisson_nll(rate, count, epsilon=1e-8):
        return tf.reduce_mean(rate - count * tf.math.log(rate + epsilon))


    def censored_nll(hazard, time, censored, epsilon=1e-8):
        return tf.reduce_mean(hazard * time - (1.0 - censored) * tf.math.log(hazard + epsilon))


    def train_step(poisson_args, censored_args):
        # both losses are differentiated (with no caller in the project, their gradient
        # symptoms would be conditional on one, issue 22); `*` passes no facts into them
        with tf.GradientTape() as tape:
            loss = poisson_nll(*poisson_args) + censored_nll(*censored_args)
        return tape.gradient(loss, [poisson_args, censored_args])
    """


def _verdicts(src: str) -> dict[str, dict]:
    """Each TNL102 finding's eager verdict, keyed by the logged input."""
    out = {}
    for finding in probed(src, select=["TNL102"]):
        verdict = probing.verify({**finding.probe, "forms": ["eager"]}, 1e6)
        out["hazard" if "log(hazard" in verdict["detail"] else "rate"] = verdict
    return out


def test_the_witness_weights_the_exploding_term_with_a_label_that_keeps_it():
    """log(hazard + eps) explodes at hazard = 0 for any label, but a censored sample (label 1)
    multiplies it by 0: the reported point must be one where the loss's own gradient
    explodes."""
    verdict = _verdicts(LOSSES)["hazard"]
    assert verdict["status"] == "confirmed" and verdict["symptom"] == "exploding-gradient"
    assert verdict["inputs"]["hazard"] == 0.0
    assert verdict["inputs"]["censored"] != 1.0
    assert abs(verdict["observed"]["loss_gradient"]["hazard"]) > 1e6


def test_a_term_weighted_by_the_label_itself_keeps_a_label_that_weights_it():
    verdict = _verdicts(LOSSES)["rate"]
    assert verdict["status"] == "confirmed"
    assert verdict["inputs"]["rate"] == 0.0 and verdict["inputs"]["count"] != 0.0
    assert abs(verdict["observed"]["loss_gradient"]["rate"]) > 1e6
