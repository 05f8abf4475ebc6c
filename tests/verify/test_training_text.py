"""Issue 24 item 3: a training simulation describes the user's model, loss and task as the
source shows them, and says plainly what it assumed.  A Dense(1, "sigmoid") classifier
compiled with a hand-written focal loss is neither "2 units ... sparse pixels or
preferences" nor "16 (assumed) inputs ... a regression (MSE)"."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

tf = pytest.importorskip("tensorflow")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from test_reachability import probed  # noqa: E402

from tfnumlint.verify import training  # noqa: E402

FOCAL = """\
    import tensorflow as tf


    def focal_loss(y_true, y_pred, gamma=2.0):
        bce = -(y_true * tf.math.log(y_pred + 1e-7) + (1 - y_true) * tf.math.log(1 - y_pred + 1e-7))
        p_t = y_true * y_pred + (1 - y_true) * (1 - y_pred)
        return tf.reduce_mean(tf.pow(1 - p_t, gamma) * bce)


    model = tf.keras.Sequential(
        [
            tf.keras.layers.Dense(32, activation="relu"),
            tf.keras.layers.Dense(1, activation="sigmoid"),
        ]
    )
    model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=0.05), loss=focal_loss)
    """


def _detail(rule: str) -> str:
    [finding] = [f for f in probed(FOCAL, "classifier.py", [rule]) if f.rule == rule]
    probe = finding.probe
    assert probe is not None and probe["kind"] == "train"
    return training.RECIPES[probe["recipe"]](probe, "float32")["detail"]


def _model_part(detail: str) -> tuple[str, str]:
    """(the description, its assumed list) of a verdict's "model: outcome" detail."""
    model = detail.split("): ", 1)[0] + ")"
    read, _, guessed = model.partition(" (assumed: ")
    return read, guessed


def test_the_saturation_simulation_describes_a_one_unit_sigmoid_classifier_and_its_loss():
    read, guessed = _model_part(_detail("TNL501"))
    assert read.startswith("the sigmoid output layer (1 unit, 32 inputs)"), read
    assert "`focal_loss`" in read and "log(p + 1e-07)" in read
    assert "2 units" not in read and "sparse pixels or preferences" not in read
    # what it chose itself is said to be assumed, each part by name
    assert "2 output units simulated for its 1" in guessed
    assert "stands in for the whole of `focal_loss`" in guessed
    assert "binary targets" in guessed and "batches of 64" in guessed


def test_the_gradient_norm_simulation_names_the_stack_and_what_stands_in_for_the_loss():
    read, guessed = _model_part(_detail("TNL502"))
    assert read.startswith(
        "the Dense stack (1 Dense(32, relu) layer, a Dense(1, sigmoid) output)"
    ), read
    assert "(assumed) inputs" not in read and "(MSE)" not in read
    assert "16 inputs" in guessed
    assert "an MSE regression in place of `focal_loss`" in guessed
