"""Verdicts on the output of a Keras layer attribute (issue 11): a softmax assignment
``s = self.assign(x)`` (``self.assign = Dense(k, "softmax")`` built in ``build``) has no zero row
short of a far-tail saturation, so a witness ``s = 0`` is not a confirmation; a linear or ReLU
layer's output does reach 0, and the same norm hazard stays confirmed.

Snippets are sliced by the real static pass and verified in-process.
"""

from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from test_caller_ranges import probes  # noqa: E402
from test_project import project  # noqa: E402
from test_reachability_gate import one_verdict, verify  # noqa: E402

POOL = """\
    import tensorflow as tf
    from tensorflow.keras import layers


    class Pool(tf.keras.layers.Layer):
        def __init__(self, k):
            super().__init__()
            self.k = k

        def build(self, input_shape):
            {build}

        def select(self, x):
            s = self.assign(x)
            cluster_sizes = tf.reduce_sum(s, axis=-2)
            loss = tf.norm(cluster_sizes, axis=-1)
            self.add_loss(loss)
            return s
    """


def norm_verdict(build: str) -> dict:
    return one_verdict(POOL.format(build=build), "TNL203")


def test_a_softmax_layer_attribute_has_no_zero_row():
    out = norm_verdict('self.assign = layers.Dense(self.k, "softmax")')
    assert out["status"] != "confirmed", out
    assert "past the float32 exp range" in out["detail"], out  # only a far tail gives 0


def test_a_linear_layer_attribute_keeps_the_zero_row_confirmed():
    out = norm_verdict("self.assign = layers.Dense(self.k)")
    assert out["status"] == "confirmed", out


def test_a_sequential_ending_in_relu_keeps_the_zero_row_confirmed():
    # a ReLU output is >= 0 and all-zero for a dead unit: the norm hazard is real
    build = 'self.assign = tf.keras.Sequential([layers.Dense(8, "softmax"), layers.Dense(self.k, "relu")])'
    out = norm_verdict(build)
    assert out["status"] == "confirmed", out


def test_an_attribute_assigned_two_different_layers_is_not_treated_as_a_softmax():
    # built as a softmax in `build`, but `__init__` made it a ReLU layer: either may be live
    src = POOL.format(build='self.assign = layers.Dense(self.k, "softmax")').replace(
        "self.k = k", 'self.k = k\n            self.assign = layers.Dense(k, "relu")'
    )
    out = one_verdict(src, "TNL203")
    assert out["status"] == "confirmed", out


HELPER = """\
    import tensorflow as tf
    from tensorflow.keras import layers


    class Pool(tf.keras.layers.Layer):
        def build(self, input_shape):
            self.assign = layers.Dense(self.k, "{act}")

        def select(self, x):
            s = self.assign(x)
            self.add_loss(self.collapse_loss(s))
            return s

        def collapse_loss(self, s):
            return tf.norm(tf.reduce_sum(s, axis=-2), axis=-1)
    """


def test_the_softmax_attribute_reaches_a_helper_one_hop_away(tmp_path):
    [probe] = probes(project(tmp_path, {"pool.py": HELPER.format(act="softmax")}), "pool.py",
                     "TNL203")  # fmt: skip
    [spec] = [s for s in probe["inputs"] if s["name"] == "s"]
    assert (spec["lo"], spec["hi"]) == (0.0, 1.0)
    assert verify(probe)["status"] != "confirmed"


def test_a_relu_attribute_through_a_helper_stays_confirmed(tmp_path):
    [probe] = probes(project(tmp_path, {"pool.py": HELPER.format(act="relu")}), "pool.py",
                     "TNL203")  # fmt: skip
    assert verify(probe)["status"] == "confirmed"


GEM = """\
    import tensorflow as tf


    class GeM(tf.keras.layers.Layer):
        def build(self, input_shape):
            self.p = self.add_weight(shape=(), initializer="ones", trainable=True)

        def call(self, x):
            return tf.pow(tf.reduce_mean(tf.nn.relu(x), axis=1), 1.0 / self.p)
    """


def test_a_weight_a_layer_adds_is_a_source_named_by_its_attribute():
    """``self.p = self.add_weight(...)`` is a weight of the slice, as ``tf.Variable`` is (not
    an untraced call whose value nothing gives): GeM's NaN gradient at a ReLU's 0 is confirmed,
    and the witness names `self.p`."""
    out = one_verdict(GEM, "TNL204")
    assert out["status"] == "confirmed", out["detail"]
    assert "self.p = " in out["detail"] and "add_weight" not in out["detail"]
    assert "gradient" in out["detail"] and "nan" in out["detail"]
