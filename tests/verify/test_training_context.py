"""Issue #11, "who drives an input": a name from the driven lexicon (``probs``, ``logits``,
``output``) makes an input driven only in a training context (analysis/driven.py); elsewhere it
is an API parameter, and a witness that needs its special value is a precondition."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")

from test_reachability import probed
from test_reachability_gate import verify


def verdict_in(src: str, rule: str, path: str) -> dict:
    [finding] = [f for f in probed(src, path, [rule]) if f.rule == rule and f.probe]
    return verify(finding.probe)


LOG_OF_PROBS = """\
    import tensorflow as tf


    class {cls}({base}):
        def {method}(self, probs):
            return tf.reduce_sum(tf.math.log(probs))
    """


def test_log_of_a_distribution_parameter_named_probs_is_a_precondition():
    src = LOG_OF_PROBS.format(cls="Coin", base="tf.Module", method="_log_prob")
    out = verdict_in(src, "TNL101", "coin.py")
    assert out["status"] == "inconclusive", out
    assert "`probs` is a parameter of `_log_prob`" in out["detail"]


def test_the_same_log_in_a_keras_layer_stays_confirmed():
    src = LOG_OF_PROBS.format(cls="Head", base="tf.keras.layers.Layer", method="score")
    assert verdict_in(src, "TNL101", "coin.py")["status"] == "confirmed"


def test_a_loss_function_in_a_module_named_as_a_loss_stays_confirmed():
    src = """\
        import tensorflow as tf


        def normalized_error(output, target):
            return tf.norm(output - target) / tf.norm(target)
        """
    assert verdict_in(src, "TNL201", "cost.py")["status"] == "confirmed"
    assert verdict_in(src, "TNL201", "linalg_util.py")["status"] == "inconclusive"
