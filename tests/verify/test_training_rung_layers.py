"""The training rung follows a Keras layer class of the program's own inside a ``Sequential``
or functional model: its ``call`` as the layer's forward, its weights from ``add_weight`` (in
``build``, shaped from the input shape, or in ``__init__``), its constructor's arguments bound;
Keras activation layers apply their op, and compile's loss may be a Keras loss object.  What
it cannot read it leaves cut (no training rung), or assumes and says so."""

from __future__ import annotations

import re
import textwrap

import pytest

pytest.importorskip("tensorflow")

from test_training_rung import by_training, on_line, verified

from tfnumlint.analysis.slicing.contract import walk
from tfnumlint.engine import LintOptions, lint_source
from tfnumlint.rules.registry import CHECKS
from tfnumlint.source import Source
from tfnumlint.verify.repro_program import Rendered

# a standardising layer over the batch axis, no epsilon
SPREAD = """\
    class Spread(keras.layers.Layer):
        def build(self, shape):
            self.a = self.add_weight(shape=shape[-1:], initializer="ones")
            self.c = self.add_weight(shape=shape[-1:], initializer="zeros")

        def call(self, h):
            mu, s2 = tf.nn.moments(h, axes=[0])
            return self.a * (h - mu) / tf.sqrt(s2) + self.c
"""
# ... in a classifier: 1025 rows in batches of 64 end each epoch with a batch of one row, whose
# variance is 0 (step 16 is that batch)
STANDARDISING = """\
    import numpy as np
    import tensorflow as tf
    from tensorflow import keras

    rng = np.random.default_rng(3)
    feats = rng.normal(0, 1, (1025, 6)).astype("float32")
    kind = rng.integers(0, 3, 1025)


SPREAD


    clf = keras.Sequential([
        keras.Input((6,)),
        keras.layers.Dense(8), Spread(), keras.layers.ReLU(),
        keras.layers.Dense(3),
    ])
    clf.compile(keras.optimizers.Adam(1e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    clf.fit(feats, kind, batch_size=64, epochs=2)
""".replace("SPREAD\n", SPREAD)


def test_a_layer_of_its_own_in_a_sequential_is_trained_to_the_last_batch_of_one_row() -> None:
    found = on_line(verified(STANDARDISING), "tf.sqrt(s2)", STANDARDISING)
    [v] = [v for f, v in found if f.rule == "TNL201"]  # the division
    assert by_training(v), v.get("detail")
    assert v["observed"]["step"] == 16
    assert "assumed" not in v["detail"]
    # its twin with an epsilon has nothing to confirm
    clean = STANDARDISING.replace("tf.sqrt(s2)", "tf.sqrt(s2 + 1e-3)")
    assert not [v for _, v in verified(clean) if v.get("status") == "confirmed"]


def spec_of(program: str, needle: str, rule: str = "TNL201") -> dict | None:
    """The training rung's spec of the finding on the line holding ``needle`` (static: nothing
    is trained)."""
    from tfnumlint.engine import load_all

    load_all()  # the rules register on import: a test run alone has imported none
    text = textwrap.dedent(program)
    options = LintOptions(codes=frozenset(c.code for c in CHECKS), slice_probes=True)
    result = lint_source(Source("train.py", text, text.encode()), options)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if needle in t)
    [found] = [f for f in result.findings if f.line == line and f.rule == rule]
    return (found.probe or {}).get("program")


def test_build_weights_are_shaped_from_the_input_shape_and_start_as_keras_starts_them() -> None:
    spec = spec_of(STANDARDISING, "tf.sqrt(s2)")
    assert spec is not None
    assert spec["weights"]["clf.layers[1].a"] == {"init": "ones", "shape": [8]}
    assert spec["weights"]["clf.layers[1].c"] == {"init": "zeros", "shape": [8]}
    assert spec["assumed"] == []
    assert any(n.get("op") == "relu" for n in walk(spec["loss"]))  # keras.layers.ReLU()


WITHOUT_BUILD = STANDARDISING.replace(
    SPREAD,
    """    class Spread(keras.layers.Layer):
        def __init__(self, gain):
            super().__init__()
            self.gain = gain

        def call(self, h):
            mu, s2 = tf.nn.moments(h, axes=[0])
            return self.gain * (h - mu) / tf.sqrt(s2)
""",
).replace("Spread()", "Spread(2.5)")


def test_a_layer_without_build_reads_its_constructor_argument() -> None:
    spec = spec_of(WITHOUT_BUILD, "tf.sqrt(s2)")
    assert spec is not None
    assert not [w for w in spec["weights"] if w.startswith("clf.layers[1].")]
    assert any(n.get("k") == "const" and n.get("v") == 2.5 for n in walk(spec["loss"]))


IN_INIT = STANDARDISING.replace(
    """        def build(self, shape):
            self.a = self.add_weight(shape=shape[-1:], initializer="ones")
            self.c = self.add_weight(shape=shape[-1:], initializer="zeros")
""",
    """        def __init__(self, units):
            super().__init__()
            self.a = self.add_weight(shape=(units,), initializer=keras.initializers.Constant(0.5))
            self.c = self.add_weight(shape=(units,))
""",
).replace("Spread()", "Spread(8)")


def test_weights_made_in_init_are_shaped_by_the_constructors_arguments() -> None:
    spec = spec_of(IN_INIT, "tf.sqrt(s2)")
    assert spec is not None
    assert spec["weights"]["clf.layers[1].a"] == {"init": "constant", "value": 0.5, "shape": [8]}
    # Keras's default for a float weight
    assert spec["weights"]["clf.layers[1].c"] == {"init": "glorot_uniform", "shape": [8]}


PROJECTED = STANDARDISING.replace(
    """        def build(self, shape):
            self.a = self.add_weight(shape=shape[-1:], initializer="ones")
            self.c = self.add_weight(shape=shape[-1:], initializer="zeros")

        def call(self, h):
            mu, s2 = tf.nn.moments(h, axes=[0])
            return self.a * (h - mu) / tf.sqrt(s2) + self.c
""",
    """        def __init__(self, width):
            super().__init__()
            self.width = width

        def build(self, shape):
            n = shape[-1]
            self.a = self.add_weight(shape=(n, self.width), initializer="identity")

        def call(self, h):
            mu, s2 = tf.nn.moments(h, axes=[0])
            return tf.matmul((h - mu) / tf.sqrt(s2), self.a)
""",
).replace("Spread()", "Spread(5)")


def test_an_initializer_the_rung_does_not_rebuild_is_assumed_and_said() -> None:
    spec = spec_of(PROJECTED, "tf.sqrt(s2)")
    assert spec is not None
    assert spec["weights"]["clf.layers[1].a"]["shape"] == [8, 5]
    assert spec["assumed"] == ["`clf.layers[1].a` starts as glorot-uniform"]
    assert spec["weights"]["clf.layers[3].kernel"]["shape"] == [5, 3]  # the layer's width


FUNCTIONAL = STANDARDISING.replace(
    """    clf = keras.Sequential([
        keras.Input((6,)),
        keras.layers.Dense(8), Spread(), keras.layers.ReLU(),
        keras.layers.Dense(3),
    ])
""",
    """    inputs = keras.Input((6,))
    logits = keras.layers.Dense(3)(keras.layers.ReLU()(Spread()(keras.layers.Dense(8)(inputs))))
    clf = keras.Model(inputs, logits)
""",
)


def test_a_layer_of_its_own_in_a_functional_model() -> None:
    spec = spec_of(FUNCTIONAL, "tf.sqrt(s2)")
    assert spec is not None
    assert spec["weights"]["clf.layers[1].a"] == {"init": "ones", "shape": [8]}


@pytest.mark.parametrize(
    "change",
    [
        # a weight only under a branch: which weights exist depends on the run
        (
            'self.c = self.add_weight(shape=shape[-1:], initializer="zeros")',
            "if shape[-1] > 1:\n                self.c = self.add_weight(shape=shape[-1:])",
        ),
        # a shape the slice does not read
        ('shape=shape[-1:], initializer="zeros"', 'shape=tuple(shape)[1:], initializer="zeros"'),
        # a weight training does not update
        ('initializer="zeros")', 'initializer="zeros", trainable=False)'),
    ],
)
def test_a_layer_the_slice_cannot_read_leaves_the_rung_out(change: tuple[str, str]) -> None:
    old, new = change
    assert old in STANDARDISING
    assert spec_of(STANDARDISING, "tf.sqrt(s2)") is not None
    assert spec_of(STANDARDISING.replace(old, new), "tf.sqrt(s2)") is None


def test_every_run_of_the_flagged_code_in_a_step_counts() -> None:
    """A layer stacked twice computes the flagged call twice: a break at the first one is a
    break of the flagged code, whichever of the two the spec's term is."""
    layout = Rendered(
        body="",
        term=3,
        where=[[5, 9], [9, 16], [0, 0], [9, 16], [9, 16]],
        children=[[], [0], [1], [2], [3]],
        span=[9, 16, 9, 30],
        term_kind="call",
        kinds=["call", "call", "call", "call", "bin"],
    )
    assert layout.flagged() == {1, 3}


LOOPED_RAW_PIXELS = """\
    import tensorflow as tf

    (x_train, y_train), _ = tf.keras.datasets.fashion_mnist.load_data()
    x_train = x_train.reshape(-1, 784).astype("float32")
    y_train = tf.keras.utils.to_categorical(y_train, 10)

    inputs = tf.keras.Input(shape=(784,))
    h = inputs
    for units in [512, 256, 128]:
        h = tf.keras.layers.Dense(units, activation="relu")(h)
    outputs = tf.keras.layers.Dense(10, activation="softmax")(h)
    model = tf.keras.Model(inputs, outputs)


    def loss_fn(y_true, y_pred):
        return tf.reduce_mean(-tf.reduce_sum(y_true * tf.math.log(y_pred), axis=1))


    model.compile(optimizer="adam", loss=loss_fn)
    model.fit(x_train, y_train, batch_size=64, epochs=10)
"""


def test_a_model_whose_layers_a_loop_builds_is_trained_as_that_stack() -> None:
    """Raw 0..255 pixels through the loop's three relu layers put the softmax's logits far
    apart at the first step, so log(p) is -inf there (the program, run on such pixels, has a
    NaN loss in its first epoch); the slice has the loop's layers, one per pass."""
    spec = spec_of(LOOPED_RAW_PIXELS, "tf.math.log(y_pred)", "TNL103")
    assert spec is not None
    kernels = sorted(w["shape"] for n, w in spec["weights"].items() if len(w["shape"]) == 2)
    assert kernels == sorted([[784, 512], [512, 256], [256, 128], [128, 10]])
    [(_, v)] = [
        (f, v)
        for f, v in on_line(verified(LOOPED_RAW_PIXELS), "tf.math.log(y_pred)", LOOPED_RAW_PIXELS)
        if f.rule == "TNL103"
    ]
    assert by_training(v), v.get("detail")


SCALED_LEAKY = """\
    import numpy as np
    import tensorflow as tf
    from tensorflow.keras import initializers, layers

    x = np.random.rand(512, 6).astype("float32") * 255.0
    y = np.eye(3, dtype="float32")[np.random.randint(0, 3, 512)]
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(6,)),
        layers.Rescaling(1.0 / 127.5, offset=-1.0),
        layers.Dense(5, kernel_initializer=initializers.RandomNormal(stddev=0.3)),
        layers.LeakyReLU(0.2),
        layers.Dense(3, activation="softmax"),
    ])


    def xent(t, p):
        return -tf.reduce_sum(t * tf.math.log(p), axis=-1)


    model.compile(optimizer="adam", loss=xent)
    model.fit(x, y, batch_size=32)
"""


def test_rescaling_and_leaky_relu_compute_what_keras_s_layers_compute() -> None:
    """The slice's forward on the program's rows equals Keras's model with the same weights;
    the first kernel is drawn with the initializer's own spread."""
    import numpy as np
    import tensorflow as tf
    from test_training_conv import program_of, slice_forward

    spec = program_of(SCALED_LEAKY)
    assert spec["weights"]["model.layers[1].kernel"]["stddev"] == 0.3
    forward, ts, w, arrays = slice_forward(spec)
    probs = int(re.search(r"t(\d+) = tf.nn.softmax\(", forward).group(1))
    keras = tf.keras.Sequential([
        tf.keras.Input(shape=(6,)),
        tf.keras.layers.Rescaling(1.0 / 127.5, offset=-1.0),
        tf.keras.layers.Dense(5), tf.keras.layers.LeakyReLU(0.2),
        tf.keras.layers.Dense(3, activation="softmax"),
    ])  # fmt: skip
    keras.set_weights(
        [w[f"model_layers_{i}_{p}"].numpy() for i in (1, 3) for p in ("kernel", "bias")]
    )
    expected = keras(tf.constant(arrays["x"][:16])).numpy()
    np.testing.assert_allclose(ts[probs].numpy(), expected, rtol=1e-5, atol=1e-6)
