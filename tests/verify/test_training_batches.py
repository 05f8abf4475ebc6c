"""How the training rung batches the program's data: Keras ``fit`` walks each epoch in order
with a last, shorter batch; a steered run's batch of copies has no spread, so a break where the
batch's spread is read is no evidence."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")

from test_training_rung import by_training, on_line, verified

from tfnumlint.verify.batch_spread import reads_batch_spread

STANDARDISED = """\
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x = rng.normal(0, 1, (4097, 6)).astype("float32")
    y = (x[:, :1] * 2.0).astype("float32")


    def standardized_error(y_true, y_pred):
        err = y_pred - y_true
        return tf.square((err - tf.reduce_mean(err)) / tf.math.reduce_std(err))


    model = tf.keras.Sequential([tf.keras.Input((6,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss=standardized_error)
    model.fit(x, y, batch_size=64, epochs=2)
"""


def test_fit_ends_each_epoch_with_the_rows_left_over() -> None:
    """4097 rows in batches of 64: every epoch ends with a batch of one row, whose standard
    deviation is 0, as Keras runs it (step 64 is that batch)."""
    [(_, v)] = on_line(verified(STANDARDISED), "reduce_std(err)", STANDARDISED)
    assert by_training(v), v.get("detail")
    assert v["observed"]["step"] == 64


def test_a_drawn_feed_has_as_many_rows_as_the_replayed_feed_it_is_batched_with() -> None:
    """Targets the data code does not replay (``np.digitize``) are drawn, but row by row
    beside ``x``'s 4097 replayed rows: the epoch still ends with a batch of one (it was cut to
    the drawn feed's 512 rows, which batches of 64 divide)."""
    drawn = STANDARDISED.replace(
        'y = (x[:, :1] * 2.0).astype("float32")',
        'y = np.digitize(x[:, :1], [-1.0, 0.0, 1.0]).astype("float32")',
    )
    [(_, v)] = on_line(verified(drawn), "reduce_std(err)", drawn)
    assert "`y` = uniform draws" in v["detail"], v["detail"]
    assert "reaches it at step 64" in v["detail"], v["detail"]  # drawn data: no confirmation


def test_copies_of_one_example_do_not_confirm_a_division_by_the_batch_spread() -> None:
    """4096 rows leave no short batch; the steered run's copies have a spread of 0, which the
    program's batches never have: that break says nothing."""
    even = STANDARDISED.replace("4097", "4096")
    [(_, v)] = on_line(verified(even), "reduce_std(err)", even)
    assert not by_training(v)
    assert "a batch of copies of one example breaks at step" in v["detail"], v["detail"]


def _call(op: str, *args: dict, **kw: dict) -> dict:
    return {"k": "call", "op": op, "args": list(args), "kw": kw}


X = {"k": "input", "name": "x"}
ZERO = {"k": "const", "v": 0.0}
ONE = {"k": "const", "v": 1.0}


@pytest.mark.parametrize(
    "tree, spread",
    [
        (_call("reduce_std", X), True),  # every axis, the batch's among them
        (_call("reduce_variance", X, ZERO), True),
        (_call("moments", X, {"k": "tuple", "items": [ZERO]}), True),
        ({"k": "bin", "op": "-", "l": X, "r": _call("reduce_mean", X, ZERO)}, True),
        (_call("reduce_std", X, ONE), False),  # within each example
        ({"k": "bin", "op": "-", "l": X, "r": _call("reduce_mean", X, ONE)}, False),
        (_call("reduce_mean", X), False),  # a mean of copies is their value, not 0
    ],
)
def test_what_reads_the_batch_spread(tree: dict, spread: bool) -> None:
    assert reads_batch_spread(tree) is spread


SPARSE = """\
    import numpy as np
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    rng = np.random.RandomState(0)
    data = (rng.rand(512, 20) * 300.0).astype(np.float32)
    labels = rng.randint(0, 4, 512)
    x = tf.compat.v1.placeholder(tf.float32, [None, 20])
    y = tf.compat.v1.placeholder(tf.int32, [None])
    W = tf.Variable(tf.random.normal([20, 4], stddev=0.1))
    b = tf.Variable(tf.zeros([4]))
    z = tf.matmul(x, W) + b
    p = tf.nn.softmax(z)
    ent = -tf.reduce_sum(p * tf.math.log(p), axis=1)
    ce = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=z))
    loss = ce - 0.01 * tf.reduce_mean(ent)
    step = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(loss)
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        for i in range(100):
            idx = rng.randint(0, 512, 32)
            sess.run(step, {x: data[idx], y: labels[idx]})
"""


def test_an_objective_with_the_sparse_fused_cross_entropy_trains_on_class_ids() -> None:
    """``sparse_softmax_cross_entropy_with_logits`` reads class ids, not one-hot rows: the
    slice trains (it was traced as the dense op and failed on the ids' shape), and the entropy
    bonus on raw features of a few hundred breaks at step 0."""
    [(_, v)] = on_line(verified(SPARSE), "tf.math.log(p)", SPARSE)
    assert by_training(v), v.get("detail")
    assert "could not be trained" not in v["detail"]


def test_the_log_softmax_entropy_beside_the_sparse_loss_has_nothing_to_confirm() -> None:
    stable = SPARSE.replace("p * tf.math.log(p)", "p * tf.nn.log_softmax(z)")
    assert not [v for _, v in verified(stable) if v.get("status") == "confirmed"]
