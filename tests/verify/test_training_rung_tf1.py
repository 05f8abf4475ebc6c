"""The training rung on TF1 programs that build their nets with ``tf.layers.dense`` inside a
helper's ``variable_scope``: the helper's two calls share the weights they name, so the rung
trains one embedding, as the program does (``analysis/slicing/program_tf1.py``)."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")

from test_training_rung import by_training, on_line, verified

TRIPLET = """\
    import numpy as np
    import tensorflow as tf

    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    anchor = tf1.placeholder(tf.float32, [None, 12])
    positive = tf1.placeholder(tf.float32, [None, 12])
    negative = tf1.placeholder(tf.float32, [None, 12])

    def embed(v):
        with tf1.variable_scope("embed", reuse=tf1.AUTO_REUSE):
            hidden = tf1.layers.dense(v, 24, activation=tf.nn.relu, name="hidden")
            return tf1.layers.dense(hidden, 6, name="out")

    ea, ep, en = embed(anchor), embed(positive), embed(negative)
    pos = tf.sqrt(tf.reduce_sum(tf.square(ea - ep), axis=1))
    neg = tf.sqrt(tf.reduce_sum(tf.square(ea - en), axis=1) + 1e-6)
    loss = tf.reduce_mean(tf.maximum(pos - neg + 0.5, 0.0))
    train = tf1.train.AdamOptimizer(1e-3).minimize(loss)
    rng = np.random.RandomState(3)
    items = rng.rand(500, 12).astype(np.float32)
    with tf1.Session() as sess:
        sess.run(tf1.global_variables_initializer())
        for i in range(200):
            a = rng.randint(0, 500, 32)
            n = rng.randint(0, 500, 32)
            sess.run(train, {anchor: items[a], positive: items[a], negative: items[n]})
"""


def test_a_helpers_scoped_layers_are_shared_and_equal_pairs_reach_the_sqrt_at_zero() -> None:
    """The positive pair is fed the anchor's own rows: through one shared embedding, the
    distance is exactly 0 and its gradient NaN at the first step."""
    results = verified(TRIPLET)
    roots = [v for f, v in on_line(results, "tf.square(ea - ep)", TRIPLET) if f.rule == "TNL202"]
    assert roots and by_training(roots[0]), [v.get("detail") for v in roots]
    weights = roots[0]["repro"]["spec"]["weights"]
    assert sorted(weights) == [
        "embed/hidden.bias", "embed/hidden.kernel", "embed/out.bias", "embed/out.kernel"]  # fmt: skip


def test_negatives_picked_by_an_index_of_their_own_are_not_the_anchors_rows() -> None:
    """``items[n]`` with its own ``randint`` is another draw of rows than ``items[a]``: the
    run feeds them apart, so the negative distance is not 0 at the first step (fed the same
    rows, every anchor was its own negative, which the program does about once in 600 rows)."""
    program = (
        TRIPLET.replace("+ 1e-6)", ")")
        .replace("tf.square(ea - ep), axis=1))", "tf.square(ea - ep), axis=1) + 1e-6)")
        .replace("rand(500, 12)", "rand(20000, 12)")
        .replace("(0, 500, 32)", "(0, 20000, 32)")
    )
    results = verified(program)
    [(_, v)] = on_line(results, "tf.square(ea - en)", program)
    assert not by_training(v) or v["observed"]["step"] > 0, v.get("detail")
