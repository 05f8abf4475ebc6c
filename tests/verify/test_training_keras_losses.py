"""The training rung reads Keras's binary cross-entropy and mean squared error, as compile's
loss (an object, a function or a string) or called in a training step, and computes them as
Keras does: probabilities clipped to [1e-7, 1 - 1e-7], logits through the stable form, a
sigmoid output of a compiled step through its logits, the targets given the predictions'
rank, each row's mean and then the batch mean."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tensorflow")

import tensorflow as tf
from test_training_rung import by_training, on_line, verified
from test_training_rung_layers import SPREAD, spec_of

from tfnumlint.analysis.slicing.contract import walk
from tfnumlint.analysis.slicing.program_losses import keras_loss
from tfnumlint.verify.repro_code import Renderer
from tfnumlint.verify.repro_program import compiled_form

keras = tf.keras
Y = np.array([1, 0, 1, 0, 1, 0], np.float32)
P = np.array([[1.0], [0.0], [1e-9], [1 - 1e-9], [0.5], [0.3]], np.float32)
Z = np.array([[-100.0], [100.0], [3.0], [-2.0], [0.0], [20.0]], np.float32)


def evaluated(tree: dict, values: np.ndarray) -> np.ndarray:
    """The tree as the training rung writes and runs it, on ``y`` = Y and ``p`` = ``values``
    (through a 1x1 identity kernel, so the slice knows the predictions' width)."""
    r = Renderer({"y": "y", "p": "p", "k": "k"})
    text = r.expr(compiled_form(tree, "float32"))
    namespace = {"tf": tf, "np": np}
    exec(r.helper_source(), namespace)  # our own helpers' text
    inputs = {"y": tf.constant(Y), "p": tf.constant(values), "k": tf.ones((1, 1))}
    return np.asarray(eval(text, namespace, inputs))


def loss_tree(form: str, logits: bool, mean: bool, compiled: bool, sigmoid: bool = False):
    pred = {"k": "call", "op": "matmul", "args": [{"k": "input", "name": "p"},
            {"k": "input", "name": "k"}], "kw": {}}  # fmt: skip
    if sigmoid:
        pred = {"k": "call", "op": "sigmoid", "args": [pred], "kw": {}}
    weights = {"k": {"init": "ones", "shape": [1, 1]}}
    return keras_loss(form, logits, mean, {"k": "input", "name": "y"}, pred, compiled, weights, {})


@pytest.mark.parametrize(
    ("form", "logits", "values", "keras_loss_of"),
    [
        ("binary", False, P, lambda: keras.losses.BinaryCrossentropy()),
        ("binary", True, Z, lambda: keras.losses.BinaryCrossentropy(from_logits=True)),
        ("squared", False, P, lambda: keras.losses.MeanSquaredError()),
        # compile's string: the function, then its rows' batch mean (compile wraps it so)
        ("squared", False, Z, lambda: lambda y, p: tf.reduce_mean(keras.losses.get("mse")(y, p))),
    ],
)
def test_the_slice_computes_the_loss_as_keras_does(form, logits, values, keras_loss_of) -> None:
    ours = evaluated(loss_tree(form, logits, True, compiled=False), values)
    theirs = keras_loss_of()(tf.constant(Y), tf.constant(values)).numpy()
    assert np.isfinite(ours)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_each_rows_loss_of_the_function_has_no_batch_mean() -> None:
    ours = evaluated(loss_tree("binary", False, False, compiled=False), P)
    theirs = keras.losses.binary_crossentropy(tf.constant(Y[:, None]), tf.constant(P)).numpy()
    assert ours.shape == (6,)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_a_sigmoid_output_of_a_compiled_step_is_read_through_its_logits() -> None:
    @tf.function
    def compiled(z):  # fit's step: Keras finds the sigmoid's input in the graph
        return keras.losses.BinaryCrossentropy()(tf.constant(Y), tf.sigmoid(z))

    ours = evaluated(loss_tree("binary", False, True, compiled=True, sigmoid=True), Z)
    np.testing.assert_allclose(ours, compiled(tf.constant(Z)).numpy(), rtol=1e-6)
    clipped = keras.losses.BinaryCrossentropy()(tf.constant(Y), tf.sigmoid(tf.constant(Z)))
    assert abs(float(clipped) - float(ours)) > 1  # eager would clip: a different loss
    # in a step the slice does not know to be compiled, which one Keras computes is not known
    assert loss_tree("binary", False, True, compiled=False, sigmoid=True) is None


# a classifier whose own layer divides by the batch's spread: 1025 rows in batches of 64 end
# each epoch with a batch of one row, whose variance is 0 (step 16); its data, layer and stack
# up to the output layer OUT, trained by compile and fit (COMPILED) or by a tape step (TAPE)
SIGMOID_OUT = 'keras.layers.Dense(1, activation="sigmoid")'
CLASSIFIER_HEAD = """\
    import numpy as np
    import tensorflow as tf
    from tensorflow import keras

    rng = np.random.default_rng(3)
    feats = rng.normal(0, 1, (1025, 6)).astype("float32")
    kind = rng.integers(0, 2, 1025).astype("float32")


SPREAD


    clf = keras.Sequential([
        keras.Input((6,)),
        keras.layers.Dense(8), Spread(), keras.layers.ReLU(),
        OUT,
    ])
""".replace("SPREAD\n", SPREAD)
COMPILED = (
    CLASSIFIER_HEAD.replace("OUT", SIGMOID_OUT)
    + """\
    clf.compile(keras.optimizers.Adam(1e-3), "binary_crossentropy")
    clf.fit(feats, kind, batch_size=64, epochs=2)
"""
)
FLAGGED = "tf.sqrt(s2)"


@pytest.mark.parametrize(
    ("out", "loss", "op"),
    [
        (SIGMOID_OUT, '"binary_crossentropy"', "sigmoid_xent"),
        (SIGMOID_OUT, "keras.losses.BinaryCrossentropy()", "sigmoid_xent"),
        ("keras.layers.Dense(1)", "keras.losses.BinaryCrossentropy(from_logits=True)",
         "sigmoid_xent"),
        ("keras.layers.Dense(1)", '"mse"', "square"),
        ("keras.layers.Dense(1)", "keras.losses.MeanSquaredError()", "square"),
        ("keras.layers.Dense(1)", "keras.losses.mean_squared_error", "square"),
    ],
)  # fmt: skip
def test_compiles_keras_loss_is_the_objective(out: str, loss: str, op: str) -> None:
    program = COMPILED.replace(SIGMOID_OUT, out).replace('"binary_crossentropy"', loss)
    spec = spec_of(program, FLAGGED)
    assert spec is not None
    assert any(n.get("op") == op for n in walk(spec["loss"]))
    assert spec["loss"]["op"] == "reduce_mean"  # the batch mean


@pytest.mark.parametrize(
    "loss",
    [
        "keras.losses.BinaryCrossentropy(label_smoothing=0.1)",  # another loss
        'keras.losses.BinaryCrossentropy(reduction="sum")',  # another reduction
        "keras.losses.BinaryCrossentropy(from_logits=flag)",  # a flag the code does not fix
    ],
)
def test_a_keras_loss_with_arguments_not_read_leaves_the_rung_out(loss: str) -> None:
    program = COMPILED.replace('"binary_crossentropy"', loss).replace(
        "    clf = ", "    flag = True\n    clf = "
    )
    assert spec_of(program, FLAGGED) is None


def test_compiles_binary_cross_entropy_trains_to_the_one_row_batch() -> None:
    [(_, v)] = [
        (f, v) for f, v in on_line(verified(COMPILED), FLAGGED, COMPILED) if f.rule == "TNL201"
    ]
    assert by_training(v), v.get("detail")
    assert v["observed"]["step"] == 16
    clean = COMPILED.replace(FLAGGED, "tf.sqrt(s2 + 1e-3)")
    assert not [v for _, v in verified(clean) if v.get("status") == "confirmed"]


TAPE = (
    CLASSIFIER_HEAD.replace("OUT", "keras.layers.Dense(1)")
    + """\
    loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)
    opt = keras.optimizers.Adam(1e-3)


    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, clf(xb, training=True))
        grads = tape.gradient(loss, clf.trainable_variables)
        opt.apply_gradients(zip(grads, clf.trainable_variables))


    for i in range(100):
        rows = rng.integers(0, 1025, 64)
        step(feats[rows], kind[rows])
"""
)


@pytest.mark.parametrize(
    ("change", "op"),
    [
        (("", ""), "sigmoid_xent"),
        (("keras.losses.BinaryCrossentropy(from_logits=True)", "keras.losses.MeanSquaredError()"),
         "square"),
        (("loss_fn(yb, clf(xb, training=True))",
          "tf.reduce_mean(keras.losses.mean_squared_error(yb[:, None], clf(xb, training=True)))"),
         "square"),
        (("loss_fn(yb, clf(xb, training=True))",
          "tf.reduce_mean(keras.losses.binary_crossentropy(yb[:, None], clf(xb, training=True), "
          "from_logits=True))"), "sigmoid_xent"),
        # probabilities that are no sigmoid's output: clipped, in any step
        (("keras.layers.Dense(1)", 'keras.layers.Dense(1, activation="relu")'),
         "clip_by_value"),
    ],
)  # fmt: skip
def test_a_keras_loss_called_in_a_tape_step_is_the_objective(change, op) -> None:
    old, new = change
    program = TAPE.replace(old, new)
    if op == "clip_by_value":
        program = program.replace("(from_logits=True)", "()")
    assert old in TAPE
    spec = spec_of(program, FLAGGED)
    assert spec is not None
    assert any(n.get("op") == op for n in walk(spec["loss"]))


def test_a_sigmoid_output_in_a_tape_step_is_not_guessed() -> None:
    """Keras reads the logits of a sigmoid output only in a graph or from its own activation:
    the slice does not know which this step is, so it leaves the loss unread."""
    program = TAPE.replace("keras.layers.Dense(1)", SIGMOID_OUT).replace("(from_logits=True)", "()")
    assert spec_of(program, FLAGGED) is None
