"""The training rung's slice of data the program's NumPy code draws (no TF import): an array
drawn once before training is the program's data, replayed; one drawn afresh inside the
training loop is not a fixed dataset, so the slice does not replay it as one; and a value a
NumPy draw gives keeps the draw's range where the witness search reads it."""

from __future__ import annotations

import textwrap

from tfnumlint.engine import LintOptions, lint_source, load_all
from tfnumlint.rules.registry import CHECKS
from tfnumlint.source import Source

BEFORE = """\
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    states = rng.normal(0, 1, (256, 8)).astype("float32")
    labels = rng.integers(0, 2, (256, 1)).astype("float32")
    net = tf.keras.Sequential([tf.keras.layers.Dense(1, activation="sigmoid")])
    opt = tf.keras.optimizers.Adam(0.01)
    for step in range(500):
        with tf.GradientTape() as tape:
            p = net(states)
            loss = -tf.reduce_mean(labels * tf.math.log(p) + (1 - labels) * tf.math.log(1 - p))
        grads = tape.gradient(loss, net.trainable_variables)
        opt.apply_gradients(zip(grads, net.trainable_variables))
"""
# the same arrays, drawn afresh at every step of the loop
INSIDE = BEFORE.replace(
    """    states = rng.normal(0, 1, (256, 8)).astype("float32")
    labels = rng.integers(0, 2, (256, 1)).astype("float32")
""",
    "",
).replace(
    "    for step in range(500):\n",
    """    for step in range(500):
        states = rng.normal(0, 1, (256, 8)).astype("float32")
        labels = rng.integers(0, 2, (256, 1)).astype("float32")
""",
)

PICKED = """\
    import numpy as np
    import tensorflow as tf

    n_actions = 4
    rng = np.random.default_rng(0)
    policy = tf.keras.Sequential([tf.keras.layers.Dense(n_actions, activation="softmax")])
    states = rng.normal(0, 1, (32, 8)).astype("float32")
    actions = rng.integers(0, n_actions, 32)
    with tf.GradientTape() as tape:
        probs = policy(states)
        picked = tf.reduce_sum(probs * tf.one_hot(actions, n_actions), axis=1)
        loss = -tf.reduce_mean(tf.math.log(picked))
"""


def _findings(program: str) -> list:
    load_all()
    text = textwrap.dedent(program)
    options = LintOptions(codes=frozenset(c.code for c in CHECKS), slice_probes=True)
    return lint_source(Source("train.py", text, text.encode()), options).findings


def _program(program: str) -> dict | None:
    specs = [f.probe["program"] for f in _findings(program) if (f.probe or {}).get("program")]
    return specs[0] if specs else None


def test_arrays_drawn_before_training_are_the_data_the_slice_replays() -> None:
    spec = _program(BEFORE)
    assert spec is not None
    assert {"states", "labels"} <= set(spec["data"])
    for name in ("states", "labels"):
        [feed] = spec["data"][name]["feeds"]
        assert feed.get("data") is not None, feed  # the program's NumPy code, replayed


def test_arrays_drawn_afresh_each_step_are_not_replayed_as_one_fixed_dataset() -> None:
    assert "states = rng.normal" in INSIDE and "    for step" in INSIDE
    assert _program(INSIDE) is None


def test_a_numpy_draw_keeps_its_range_in_the_probe() -> None:
    inputs = {
        s["name"]: s
        for f in _findings(PICKED)
        if f.probe and f.probe.get("kind", "expr") == "expr"
        for s in f.probe.get("inputs") or []
    }
    actions = inputs["actions"]
    assert actions["origin"] == "random"
    assert (actions["lo"], actions["hi"]) == (0.0, 3.0)  # integers(0, 4): 0 to 3
