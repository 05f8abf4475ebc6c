"""A gradient symptom needs a differentiable input.  A cut value made only from constants and
shapes (``tf.eye(n)``, ``tf.shape(x)[0]``, ``x.shape[-1]``, ``tf.range``, ``tf.ones``, literals,
and casts and arithmetic of those) takes no gradient from anything, so a NaN gradient "with
respect to ``tf.eye(...)``" is one the program never computes (round 17 review #13: the untaken
branch ``eye(d) / d`` of a covariance's ``tf.where``).  The slicer marks such an input
``constant``; the gradient gate refutes a symptom resting on such inputs alone."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")

from test_reachability import one_probe
from test_reachability_gate import verify

from tfnumlint.verify import gradient_gate

# `{d}`: the event size the identity is divided by; `cov` and `concentration` are the layer's
# own inputs, which training differentiates.
SPREAD = """\
    import tensorflow as tf


    class Spread(tf.keras.layers.Layer):
        def _event_size(self, x):
            return tf.shape(x)[-1:]

        def call(self, mean, concentration, cov):
            d = {d}
            return tf.where(
                concentration > 0.0, cov, tf.eye(3, batch_shape=tf.shape(concentration)) / d
            )
    """
OWN_SIZE = "tf.cast(self._event_size(mean)[0], mean.dtype)"
EYE = "tf.eye(3, batch_shape=tf.shape(concentration))"


def _specs(d: str) -> dict[str, dict]:
    return {s["name"]: s for s in one_probe(SPREAD.format(d=d), "TNL302")["inputs"]}


@pytest.mark.parametrize(
    ("d", "size"),
    [
        (OWN_SIZE, "self._event_size(mean)[0]"),  # a method of the class returning a shape
        ("tf.cast(tf.shape(mean)[-1], mean.dtype)", "tf.shape(mean)[-1]"),
        ("tf.cast(tf.range(4)[-1], tf.float32)", "tf.range(4)[-1]"),
    ],
)
def test_inputs_made_from_constants_and_shapes_are_marked(d, size):
    specs = _specs(d)
    assert specs[EYE].get("constant"), specs[EYE]
    assert specs[size].get("constant"), specs[size]
    assert not specs["cov"].get("constant") and not specs["concentration"].get("constant")


@pytest.mark.parametrize("d", ["tf.reduce_sum(mean)", "tf.cast(mean[0], tf.float32)"])
def test_an_input_computed_from_a_differentiable_value_is_not_marked(d):
    """A sum or an entry of `mean` (a layer input) carries its gradient."""
    specs = _specs(d)
    assert not any(s.get("constant") for n, s in specs.items() if n != EYE), specs


def _witness(grads: dict) -> dict:
    return {
        "status": "confirmed",
        "symptom": "nan-gradient",
        "detail": "at d = 0, where(...) = 1 but its gradient d/deye = nan",
        "inputs": dict.fromkeys(grads, 1.0),
        "observed": {"value": 1.0, "gradient": grads},
    }


def test_a_nan_gradient_only_with_respect_to_constants_is_refuted():
    probe = one_probe(SPREAD.format(d=OWN_SIZE), "TNL302")
    size = "self._event_size(mean)[0]"
    grads = {"concentration": 0.0, "cov": 1.0, EYE: "nan", size: "nan"}
    out = gradient_gate.apply(probe, _witness(grads))
    assert out["status"] == "refuted", out
    assert f"no gradient can reach `{EYE}` or `{size}`" in out["detail"], out
    assert "made only from constants and shapes" in out["detail"], out


def test_a_nan_gradient_that_also_reaches_a_differentiable_input_stays():
    probe = one_probe(SPREAD.format(d=OWN_SIZE), "TNL302")
    grads = {"concentration": 0.0, "cov": "nan", EYE: "nan", "self._event_size(mean)[0]": "nan"}
    assert gradient_gate.apply(probe, _witness(grads))["status"] == "confirmed"


def test_the_untaken_identity_branch_is_refuted_end_to_end():
    """The probe finds the NaN gradient of `eye / d` at d = 0 through the untaken branch; it
    is with respect to the identity and the event size alone, which no gradient reaches."""
    out = verify(one_probe(SPREAD.format(d=OWN_SIZE), "TNL302"))
    assert out["status"] == "refuted", out
    fact = out["detail"].split(" (seen: ")[0]  # the fact first, what the probe saw after it
    assert fact.startswith("no gradient can reach `"), out
    assert "made only from constants and shapes" in fact, out


# `{counts}`: what the average divides by; `totals` and `scores` are the function's own inputs.
AVERAGE = """\
    import tensorflow as tf


    def average(totals, scores):
        counts = {counts}
        safe = tf.where(~tf.equal(counts, 0), totals, 0.)
        return tf.where(~tf.equal(counts, 0), safe / counts, 0.)
    """


def test_a_count_cast_from_an_index_takes_no_gradient():
    """`cast(argmax(s), dt)` (round 18 review #2's shape: counts cast from integer indices): TF
    does not differentiate argmax, so a NaN gradient d/dcounts at counts = 0 is never computed."""
    out = verify(one_probe(AVERAGE.format(counts="tf.cast(tf.argmax(scores, -1), totals.dtype)"),
                           "TNL302"))  # fmt: skip
    assert out["status"] == "refuted", out
    fact = out["detail"].split(" (seen: ")[0]
    assert fact.startswith("no gradient can reach `tf.argmax(scores, -1)`"), out
    assert "whole numbers TF does not differentiate (`tf.argmax`)" in fact, out


@pytest.mark.parametrize(
    "counts", ["tf.reduce_sum(tf.math.softplus(scores), -1)", "tf.cast(scores[0], tf.float32)"]
)
def test_a_count_computed_from_a_differentiable_value_keeps_its_gradient(counts):
    """The guard: a sum or an entry of `scores` carries its gradient, cast or not."""
    specs = one_probe(AVERAGE.format(counts=counts), "TNL302")["inputs"]
    assert not any(s.get("constant") for s in specs), specs
