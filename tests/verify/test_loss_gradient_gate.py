"""Issue 22, "gradients are judged locally": an exploding gradient confirms only where the loss
the flagged term feeds sees it.  `p * log(p + eps)` has d/dp log(p + eps) = 1/eps at p = 0, but
the p factor cancels it: d/dp [p log(p + eps)] = log(p + eps) + p / (p + eps), bounded there."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("tensorflow")

from conftest import differentiated
from test_reachability_gate import one_verdict

from tfnumlint.verify.gradient_gate import cancelled_downstream

ENTROPY = """\
    import tensorflow as tf


    def entropy(outputs):
        return -tf.reduce_mean(tf.reduce_sum(outputs * tf.math.log(outputs + 1e-8), -1))
    """

WEIGHTED = """\
    import tensorflow as tf


    def weighted(outputs, labels):
        return -tf.reduce_mean(labels * tf.math.log(outputs + 1e-8))
    """


def test_an_explosion_the_p_factor_cancels_is_not_confirmed():
    out = one_verdict(ENTROPY, "TNL102")
    assert out["status"] == "inconclusive", out
    reason = out["detail"].split(" (seen: ")[0]
    assert re.match(
        r"the gradient explodes only locally \(d/doutputs = [0-9.]+e\+0[78]\)", reason
    ), out
    assert "the loss it feeds gets a bounded gradient" in reason
    step = [s for s in out["trail"] if s["gate"] == "gradient flow"]
    assert step and step[0]["status"] == "inconclusive", out["trail"]


def test_an_explosion_the_loss_sees_passes_the_gradient_gate():
    """`labels * log(outputs + eps)`: the loss sees d/doutputs = 1e8, so the gradient gate keeps
    it; what stops a confirmation is that only the use of `outputs` says it is a probability."""
    out = one_verdict(differentiated(WEIGHTED, "weighted"), "TNL102")  # a training step's loss
    step = [s for s in out["trail"] if s["gate"] == "gradient flow"]
    assert step and step[0]["status"] == "confirmed", out["trail"]
    assert out["observed"]["gradient"]["outputs"] >= 1e7, out
    assert out["status"] == "inconclusive", out
    assert "only its use says `outputs` is a probability" in out["detail"], out


def test_the_gate_reads_the_loss_gradient_not_the_local_one():
    seen = {
        "status": "confirmed",
        "symptom": "exploding-gradient",
        "observed": {"gradient": {"x": 1e8, "y": 0.0}, "loss_gradient": {"x": 18.4, "y": 0.0}},
    }
    assert "d/dx = 1e+08" in (cancelled_downstream(seen) or "")
    seen["observed"]["loss_gradient"]["y"] = "nan"  # the loss breaks: not cancelled
    assert cancelled_downstream(seen) is None
    seen["observed"].pop("loss_gradient")  # no loss to judge by: the local verdict stands
    assert cancelled_downstream(seen) is None
    assert cancelled_downstream({**seen, "symptom": "nan-gradient"}) is None


SPAN = """\
    import tensorflow as tf


    def {f}({spec}):
        return -tf.math.log({spec}.{hi} - {spec}.{lo})
    """


@pytest.mark.parametrize(
    "names",
    [
        {"f": "uniform_log_prob", "spec": "action_spec", "hi": "maximum", "lo": "minimum"},
        {"f": "g", "spec": "s", "hi": "a", "lo": "b"},
    ],
)
def test_a_witness_made_only_of_free_values_is_conditional(names):
    """Issue 22: `spec.maximum` = -1, `spec.minimum` = 1 shows what the expression does, not
    what the program reaches: nothing in view gives the attributes values."""
    out = one_verdict(SPAN.format(**names), "TNL104")
    assert out["status"] == "inconclusive", out
    assert "are attributes" in out["detail"], out
    step = [s for s in out["trail"] if s["gate"] == "free signs"]
    assert step and step[0]["status"] == "inconclusive", out["trail"]
