"""The training rung reads Keras's recurrent layers (``LSTM``, ``GRU``, ``SimpleRNN``) and
``Conv1D`` in a model's stack: over the steps of what reaches them, with Keras's defaults (gates, activations,
the LSTM's forget bias at 1, the GRU's two biases), the last step's output or every step's.
The slice computes what Keras computes on the same weights; a layer with a keyword it would not
reproduce leaves the stack cut."""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from test_training_conv import program_of, slice_forward  # noqa: E402

from tfnumlint.engine import LintOptions, lint_source, load_all  # noqa: E402
from tfnumlint.rules.registry import CHECKS  # noqa: E402
from tfnumlint.source import Source  # noqa: E402

PROGRAM = """\
    import numpy as np
    import tensorflow as tf
    from tensorflow import keras

    rng = np.random.default_rng(0)
    X = rng.integers(0, 500, size=(256, 12))
    y = rng.integers(0, 2, size=(256,)).astype("float32")

    model = keras.Sequential([
        keras.layers.Embedding(500, 8),
        keras.layers.CELL,
        keras.layers.Dense(1, activation="sigmoid"),
    ])


    def bce(t, p):
        return -tf.reduce_mean(t * tf.math.log(p) + (1 - t) * tf.math.log(1 - p))


    model.compile(optimizer="adam", loss=bce)
    model.fit(X, y, epochs=2, batch_size=32)
"""
KERAS = {"LSTM": tf.keras.layers.LSTM, "GRU": tf.keras.layers.GRU,
         "SimpleRNN": tf.keras.layers.SimpleRNN}  # fmt: skip


@pytest.mark.parametrize("cell", ["LSTM", "GRU", "SimpleRNN"])
@pytest.mark.parametrize("sequences", [False, True])
def test_the_slice_runs_the_layer_as_keras_does_on_the_same_weights(cell, sequences) -> None:
    given = f"{cell}(6, return_sequences=True)" if sequences else f"{cell}(6)"
    program = PROGRAM.replace("CELL", given)
    if sequences:  # a sequence of outputs: pooled before the classifier
        program = program.replace(
            "keras.layers.Dense(1",
            "keras.layers.GlobalAveragePooling1D(),\n        keras.layers.Dense(1",
        )
    forward, ts, weights, _ = slice_forward(program_of(program))
    embedded = int(re.search(r"t(\d+) = _embedding_lookup\(", forward).group(1))
    ran = int(re.search(r"t(\d+) = _recurrent\(", forward).group(1))
    layer = KERAS[cell](6, return_sequences=sequences)
    layer.build((None, 12, 8))
    layer.set_weights([weights[f"model_layers_1_{w}"].numpy()
                       for w in ("kernel", "recurrent_kernel", "bias")])  # fmt: skip
    expected = layer(ts[embedded]).numpy()
    assert ts[ran].shape == expected.shape
    np.testing.assert_allclose(ts[ran].numpy(), expected, rtol=1e-4, atol=1e-5)


def test_the_layers_weights_start_as_keras_starts_them() -> None:
    spec = program_of(PROGRAM.replace("CELL", "LSTM(6)"))
    w = spec["weights"]
    assert w["model.layers[1].kernel"] == {"init": "glorot_uniform", "shape": [8, 24]}
    assert w["model.layers[1].recurrent_kernel"] == {"init": "orthogonal", "shape": [6, 24]}
    assert w["model.layers[1].bias"]["value"] == [0.0] * 6 + [1.0] * 6 + [0.0] * 12
    gru = program_of(PROGRAM.replace("CELL", "GRU(6)"))["weights"]["model.layers[1].bias"]
    assert gru == {"init": "zeros", "shape": [2, 18]}


@pytest.mark.parametrize(
    "given",
    ["LSTM(6, dropout=0.2)", "LSTM(6, go_backwards=True)", "GRU(6, activation='relu')",
     "SimpleRNN(6, 'relu')", "LSTM(6, return_sequences=FLAG)"],
)  # fmt: skip
def test_a_layer_the_slice_would_not_run_as_keras_does_leaves_the_stack_cut(given) -> None:
    load_all()
    text = textwrap.dedent(PROGRAM.replace("CELL", given))
    options = LintOptions(codes=frozenset(c.code for c in CHECKS), slice_probes=True)
    found = lint_source(Source("train.py", text, text.encode()), options).findings
    assert found and not [f for f in found if f.probe and f.probe.get("program")]


CONV1D = """\
    import numpy as np
    import tensorflow as tf

    windows = np.random.randn(300, 20, 3).astype("float32")
    labels = np.eye(4, dtype="float32")[np.random.randint(0, 4, 300)]
    model = tf.keras.Sequential([
        tf.keras.layers.Conv1D(5, 3, LAYOUT activation="relu", input_shape=(20, 3)),
        tf.keras.layers.GlobalMaxPooling1D(),
        tf.keras.layers.Dense(4, activation="softmax"),
    ])


    def xent(t, p):
        return -tf.reduce_sum(t * tf.math.log(p), axis=-1)


    model.compile(optimizer="adam", loss=xent)
    model.fit(windows, labels, batch_size=32)
"""


@pytest.mark.parametrize(
    "layout, keras_kw",
    [("", {}), ("strides=2, padding='same',", {"strides": 2, "padding": "same"})],
)
def test_a_conv1d_stack_computes_what_keras_computes(layout: str, keras_kw: dict) -> None:
    spec = program_of(CONV1D.replace("LAYOUT", layout))
    assert spec["weights"]["model.layers[0].kernel"]["shape"] == [3, 3, 5]
    forward, ts, w, arrays = slice_forward(spec)
    probs = int(re.search(r"t(\d+) = tf.nn.softmax\(", forward).group(1))
    keras = tf.keras.Sequential([
        tf.keras.Input(shape=(20, 3)),
        tf.keras.layers.Conv1D(5, 3, activation="relu", **keras_kw),
        tf.keras.layers.GlobalMaxPooling1D(),
        tf.keras.layers.Dense(4, activation="softmax"),
    ])  # fmt: skip
    keras.set_weights(
        [w[f"model_layers_{i}_{p}"].numpy() for i in (0, 2) for p in ("kernel", "bias")]
    )
    expected = keras(tf.constant(arrays["windows"][:16])).numpy()
    np.testing.assert_allclose(ts[probs].numpy(), expected, rtol=1e-5, atol=1e-6)
