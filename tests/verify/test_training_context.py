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
            return tf.reduce_sum(tf.math.log(1. - probs))
    """


def test_log_of_a_distribution_parameter_named_probs_is_a_precondition():
    src = LOG_OF_PROBS.format(cls="Coin", base="tf.Module", method="_log_prob")
    out = verdict_in(src, "TNL101", "coin.py")
    assert out["status"] == "inconclusive", out
    assert "`probs` is a parameter of `_log_prob`" in out["detail"]


def test_the_same_log_in_a_keras_layer_is_conditional_only_on_the_use():
    # a Keras layer's input is driven (training sweeps it), so genericity does not hold it
    # back; but only its use (its complement is logged) says `probs` is a probability, not a
    # producer, and a use never confirms (issue 22)
    src = LOG_OF_PROBS.format(cls="Head", base="tf.keras.layers.Layer", method="score")
    out = verdict_in(src, "TNL101", "coin.py")
    assert out["status"] == "inconclusive", out
    assert out["detail"].startswith("conditional: only its use says `probs` is a probability")
    assert "is a parameter of" not in out["detail"], out


def test_a_function_a_training_step_differentiates_stays_confirmed_whatever_its_module():
    from test_reachability_gate import trained

    src = """\
        import tensorflow as tf


        def normalized_error(output, target):
            return tf.norm(output - target) / tf.norm(target)
        """
    step = trained(src, "normalized_error(model(x), y)")
    for path in ("cost.py", "linalg_util.py"):  # a module's name decides nothing
        assert verdict_in(step, "TNL201", path)["status"] == "confirmed"
        assert verdict_in(src, "TNL201", path)["status"] == "inconclusive"


# ---------------------------------------------------------------- contracts the library declares


def test_a_witness_against_a_constraining_bijector_and_the_sample_check_is_refuted():
    src = """\
        import tensorflow as tf
        from tensorflow_probability.python.internal import parameter_properties
        from tensorflow_probability.python.bijectors import softplus as softplus_bijector


        class Rate(tf.Module):
            @classmethod
            def _parameter_properties(cls, dtype):
                return dict(
                    rate=parameter_properties.ParameterProperties(
                        default_constraining_bijector_fn=lambda: softplus_bijector.Softplus(low=1.)))

            def _log_prob(self, x):
                return tf.math.log(self.rate - x)

            def _sample_control_dependencies(self, value):
                return [tf.debugging.assert_non_positive(value)]
        """
    out = verdict_in(src, "TNL104", "rate.py")
    assert out["status"] == "refuted", out
    assert "its constraining bijector is Softplus" in out["detail"]


def test_a_witness_that_breaks_the_sample_check_is_refuted():
    src = """\
        import tensorflow as tf
        from tensorflow_probability.python.internal import assert_util


        class Counts(tf.Module):
            def _log_prob(self, x):
                return tf.math.log(x - self.shift)

            def _sample_control_dependencies(self, value):
                assertions = []
                if not self.validate_args:
                    return assertions
                assertions.append(assert_util.assert_positive(value))
                return assertions

            def _parameter_control_dependencies(self, is_init):
                if not self.validate_args:
                    return []
                return [assert_util.assert_less_equal(self.shift, -1.)]
        """
    out = verdict_in(src, "TNL104", "counts.py")
    assert out["status"] == "refuted", out
    assert "`_sample_control_dependencies` asserts `assert_positive`" in out["detail"]


def test_a_bijector_inverse_outside_the_forward_image_is_refuted():
    src = """\
        import tensorflow as tf
        from tensorflow_probability.python.internal import assert_util


        class Squash(tf.Module):
            def _forward(self, x):
                return tf.nn.tanh(x)

            def _inverse(self, y):
                return tf.math.log(y - self.low)

            def _parameter_control_dependencies(self, is_init):
                return [assert_util.assert_less(self.low, -2.)]
        """
    out = verdict_in(src, "TNL104", "squash.py")
    assert out["status"] == "refuted", out  # y < low < -2 is outside tanh's image [-1, 1]


def test_a_log_prob_by_its_name_reaches_no_extreme_even_where_training_differentiates_it():
    from test_reachability_gate import trained

    src = """\
        import tensorflow as tf


        def ratio_loss(output, df):
            return tf.math.exp(-_helper_log_prob(output, df))
        """
    outside = verdict_in(src, "TNL301", "chi2.py")  # no caller: the value is any call's result
    assert outside["status"] == "inconclusive", outside
    assert "computed by a call that was not traced" in outside["detail"]
    inside = verdict_in(trained(src, "ratio_loss(model(x), 3.0)"), "TNL301", "chi2.py")
    # differentiated by a training step or not, only the helper's name says its result is a
    # log-probability that reaches -100: names never confirm (issue 22)
    assert inside["status"] == "inconclusive", inside
    assert "computed by a call that was not traced" in inside["detail"], inside
