"""The training rung reads Keras's ``BatchNormalization`` in a model's stack: as it trains under
``fit`` (each feature normalised over the batch's rows, and over an image's positions after a
convolution, then scaled by ``gamma`` and shifted by ``beta``), and in inference in a tape step's
``model(x)`` (its moving statistics, at their start).  The slice computes what Keras computes;
a normalisation it would not compute as Keras does leaves the stack cut."""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from test_training_conv import calls, program_of, slice_forward  # noqa: E402

FIT = """\
    import numpy as np
    import tensorflow as tf
    from tensorflow import keras

    rng = np.random.default_rng(0)
    x = rng.normal(2.0, 3.0, (256, 3)).astype("float32")
    y = np.eye(2, dtype="float32")[(x[:, 0] > 2).astype(int)]


    def xent(t, p):
        return -tf.reduce_sum(t * tf.math.log(p), axis=-1)


    model = keras.Sequential([
        keras.Input((3,)),
        keras.layers.Dense(4),
        keras.layers.BatchNormalization(NORM),
        keras.layers.Dense(2, activation="softmax"),
    ])
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss=xent)
    model.fit(x, y, batch_size=16, epochs=2)
"""
# the same model in a tape step that calls it without training=True: inference mode
TAPE = FIT.replace(
    """    model.compile(optimizer=keras.optimizers.Adam(0.01), loss=xent)
    model.fit(x, y, batch_size=16, epochs=2)
""",
    """    opt = keras.optimizers.Adam(0.01)
    for step in range(100):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(xent(y, model(x)))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
""",
)


def _normalised_by_the_slice(program: str) -> tuple[np.ndarray, np.ndarray, dict]:
    """(the Dense layer's output, the normalisation's output, the weights), as the rendered
    slice computes them on the first 16 rows of the program's data."""
    forward, ts, weights, _ = slice_forward(program_of(program))
    dense = int(re.search(r"t(\d+) = \(t\d+ \+ model_layers_0_bias\)", forward).group(1))
    normed = int(re.search(r"t(\d+) = \(t\d+ \+ model_layers_1_beta\)", forward).group(1))
    return ts[dense].numpy(), ts[normed].numpy(), weights


@pytest.mark.parametrize(
    ("norm", "given"),
    [("", {}), ("epsilon=0.01", {"epsilon": 0.01}),
     ("epsilon=0.5, center=True", {"epsilon": 0.5, "center": True})],
)  # fmt: skip
def test_under_fit_it_normalises_over_the_batch_as_keras_trains(norm: str, given: dict) -> None:
    h, normed, weights = _normalised_by_the_slice(FIT.replace("NORM", norm))
    keras_norm = tf.keras.layers.BatchNormalization(**given)  # the program's layer
    keras_norm.build((None, 4))
    keras_norm.gamma.assign(weights["model_layers_1_gamma"])
    keras_norm.beta.assign(weights["model_layers_1_beta"])
    expected = keras_norm(tf.constant(h), training=True).numpy()
    np.testing.assert_allclose(normed, expected, rtol=1e-4, atol=1e-5)
    assert abs(normed.mean(axis=0)).max() < 1e-4  # each feature centred over the rows


def test_in_a_tape_step_without_training_it_reads_its_moving_statistics() -> None:
    h, normed, _ = _normalised_by_the_slice(TAPE.replace("NORM", ""))
    keras_norm = tf.keras.layers.BatchNormalization()
    expected = keras_norm(tf.constant(h), training=False).numpy()  # moving mean 0, var 1
    np.testing.assert_allclose(normed, expected, rtol=1e-5, atol=1e-6)


def test_after_a_convolution_it_normalises_over_the_rows_and_every_position() -> None:
    program = """\
        import numpy as np
        import tensorflow as tf

        images = np.random.rand(512, 8, 8, 1).astype("float32")
        targets = np.eye(4, dtype="float32")[np.random.randint(0, 4, 512)]

        def xent(t, p):
            return -tf.reduce_sum(t * tf.math.log(p), axis=-1)

        model = tf.keras.Sequential([
            tf.keras.layers.Conv2D(8, (3, 3), input_shape=(8, 8, 1)),
            tf.keras.layers.BatchNormalization(),
            tf.keras.layers.ReLU(),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(4, activation="softmax"),
        ])
        model.compile(optimizer="adam", loss=xent)
        model.fit(images, targets, batch_size=32)
    """
    spec = program_of(program)
    assert spec["weights"]["model.layers[1].gamma"]["shape"] == [8]  # one per channel
    means = [n for n in calls(spec) if n["op"] == "reduce_mean" and len(n["args"]) == 3]
    axes = [[i["v"] for i in n["args"][1]["items"]] for n in means]
    assert axes and all(a == [0, 1, 2] for a in axes)  # the mean and the variance


@pytest.mark.parametrize(
    "norm",
    ["axis=1", "beta_initializer='ones'", "renorm=True", "0", "gamma_constraint=None"],
)
def test_a_normalisation_the_slice_would_not_compute_as_keras_does_leaves_it_cut(norm) -> None:
    from tfnumlint.engine import LintOptions, lint_source, load_all
    from tfnumlint.rules.registry import CHECKS
    from tfnumlint.source import Source

    load_all()
    text = textwrap.dedent(FIT.replace("NORM", norm))
    options = LintOptions(codes=frozenset(c.code for c in CHECKS), slice_probes=True)
    found = lint_source(Source("train.py", text, text.encode()), options).findings
    assert found and not [f for f in found if (f.probe or {}).get("program")]
