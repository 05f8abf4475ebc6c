"""A Keras layer attribute is what its construction says (issue 11).

``self.assign = Dense(k, "softmax")`` in ``build`` makes ``self.assign(x)`` a softmax output in
every method of the class, as a literal ``tf.nn.softmax(...)`` would be; a convolution, an
``Activation``/``Softmax``/``ReLU``/``Lambda`` layer and a ``Sequential`` (its last layer, also
when grown by ``.add``) likewise.  An unknown activation, or an attribute assigned two
different layers, says nothing.  Static only: the probe input the verifier would receive.
"""

from __future__ import annotations

import pytest
from test_reachability import one_probe

LAYER = """\
    import tensorflow as tf
    from tensorflow.keras import layers


    class Head(tf.keras.layers.Layer):
        def __init__(self, k, act):
            super().__init__()
            self.k = k
            self.act = act
            {init}

        def build(self, input_shape):
            {build}

        def call(self, x):
            s = self.out(x)
            loss = tf.norm(tf.reduce_sum(s, -2), axis=-1)
            self.add_loss(loss)
            return s
    """


def output_spec(build: str, init: str = "pass") -> dict:
    """The probe input standing for ``s = self.out(x)``."""
    probe = one_probe(LAYER.format(build=build, init=init), "TNL203")
    [spec] = [s for s in probe["inputs"] if s["name"] == "s"]
    return spec


def producer(spec: dict) -> tuple:
    return spec["producer"], spec["lo"], spec["hi"]


@pytest.mark.parametrize(
    "build, expected",
    [
        ('self.out = layers.Dense(self.k, "softmax")', ("softmax", 0.0, 1.0)),
        ("self.out = layers.Dense(self.k, activation=tf.nn.sigmoid)", ("sigmoid", 0.0, 1.0)),
        ("self.out = layers.Conv2D(4, 3, padding='same', activation='relu')", ("relu", 0.0, "inf")),
        ("self.out = layers.Conv1D(4, 3, activation=tf.nn.softplus)", ("softplus", 0.0, "inf")),
        ('self.out = layers.Activation("sigmoid")', ("sigmoid", 0.0, 1.0)),
        ("self.out = layers.Softmax(axis=-1)", ("softmax", 0.0, 1.0)),
        ("self.out = layers.ReLU()", ("relu", 0.0, "inf")),
        ("self.out = layers.ReLU(max_value=6.0)", ("relu", 0.0, "inf")),
        ("self.out = layers.Lambda(tf.nn.softmax)", ("softmax", 0.0, 1.0)),
        (
            'self.out = tf.keras.Sequential([layers.Dense(8, "tanh"), layers.Dense(self.k, "relu")])',
            ("relu", 0.0, "inf"),
        ),
    ],
)
def test_a_layer_attribute_built_in_build_gives_its_activation(build, expected):
    spec = output_spec(build)
    assert producer(spec) == expected
    assert spec["origin"] == "model"


@pytest.mark.parametrize(
    "build",
    [
        "self.out = layers.Dense(self.k)",  # no activation: a linear output (a logit)
        "self.out = layers.Dense(self.k, None)",
        "self.out = layers.Conv2D(4, 3)",
    ],
)
def test_a_layer_without_activation_is_linear(build):
    assert producer(output_spec(build)) == ("linear", "-inf", "inf")


@pytest.mark.parametrize(
    "build",
    [
        "self.out = layers.Dense(self.k, self.act)",  # chosen by the caller
        "self.out = layers.Conv2D(4, 3, activation=self.act)",
        "self.out = layers.Lambda(lambda t: t / 2.0)",
        "self.out = layers.ReLU(negative_slope=0.1)",  # a leaky ReLU: negative outputs
        "self.out = layers.Activation(self.act)",
    ],
)
def test_an_unknown_activation_gives_no_range(build):
    spec = output_spec(build)
    assert (spec["lo"], spec["hi"]) == ("-inf", "inf")
    assert spec["producer"] not in ("softmax", "sigmoid", "relu", "linear")


def test_a_sequential_grown_by_add_has_its_last_layers_activation():
    build = """self.out = tf.keras.Sequential()
            for units in (16, 8):
                self.out.add(layers.Dense(units, "relu"))
            self.out.add(layers.Dense(self.k, "softmax"))"""
    assert producer(output_spec(build)) == ("softmax", 0.0, 1.0)


def test_a_local_sequential_grown_by_add_has_its_last_layers_activation():
    src = """\
        import tensorflow as tf


        def model_fn(x):
            model = tf.keras.Sequential()
            model.add(tf.keras.layers.Dense(8, "tanh"))
            model.add(tf.keras.layers.Dense(4, "relu"))
            h = model(x)
            return x / tf.reduce_sum(h)
        """
    probe = one_probe(src, "TNL201")
    [spec] = [s for s in probe["inputs"] if s["name"] == "h"]
    assert producer(spec) == ("relu", 0.0, "inf")


def test_a_none_placeholder_in_init_does_not_hide_the_layer_built_later():
    spec = output_spec('self.out = layers.Dense(self.k, "softmax")', init="self.out = None")
    assert producer(spec) == ("softmax", 0.0, 1.0)


def test_an_attribute_assigned_two_different_layers_gives_nothing():
    spec = output_spec(
        'self.out = layers.Dense(self.k, "relu")', init='self.out = layers.Dense(k, "softmax")'
    )
    assert (spec["lo"], spec["hi"]) == ("-inf", "inf")
    assert spec["producer"] not in ("softmax", "relu")


def test_an_attribute_assigned_a_layer_and_a_function_gives_nothing():
    spec = output_spec('self.out = layers.Dense(self.k, "softmax")', init="self.out = act")
    assert (spec["lo"], spec["hi"]) == ("-inf", "inf")


def test_the_same_layer_assigned_twice_keeps_its_activation():
    spec = output_spec(
        'self.out = layers.Dense(self.k, "softmax")', init='self.out = layers.Dense(k, "softmax")'
    )
    assert producer(spec) == ("softmax", 0.0, 1.0)
