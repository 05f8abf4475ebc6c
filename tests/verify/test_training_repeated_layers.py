"""The training rung reads layers made in a generator or list comprehension and unpacked into
names (``wq, wk, wv = (Dense(h) for _ in range(3))``) as if each were written out: each name
its own layer, with its own weights; a comprehension it cannot read item by item leaves the
rung out."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")

from test_training_rung import by_training, on_line, verified
from test_training_rung_layers import spec_of

# linear attention with a ReLU feature map: a time step whose active query features no key
# of the window activates has a denominator of exactly 0 (0 / 0 = NaN; run as written, with
# Keras's seeds 0-4, it breaks at step 0, 0, 0, 3, 1)
ATTENTION = """\
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(8)
    state = rng.integers(0, 3, 600)
    level = rng.normal(0, 0.5, (3, 5))[state]
    wave = np.sin(0.3 * np.arange(60)[None, :, None] + rng.uniform(0, 6, (600, 1, 5)))
    series = (level[:, None, :] + wave).astype(np.float32)

    wq, wk, wv = (tf.keras.layers.Dense(8, use_bias=False) for _ in range(3))
    clf = tf.keras.layers.Dense(3)
    opt = tf.keras.optimizers.Adam(1e-3)


    def forward(x):
        q, k, val = tf.nn.relu(wq(x)), tf.nn.relu(wk(x)), wv(x)
        kv = tf.einsum("bth,btd->bhd", k, val)
        num = tf.einsum("bth,bhd->btd", q, kv)
        den = tf.einsum("bth,bh->bt", q, tf.reduce_sum(k, axis=1))
        mixed = num / den[:, :, None]
        return clf(tf.reduce_mean(mixed, axis=1))


    forward(series[:2])  # the layers are built: their variables exist
    params = wq.trainable_variables + wk.trainable_variables + wv.trainable_variables
    params = params + clf.trainable_variables


    def one_batch(xb, yb):
        with tf.GradientTape() as tape:
            err = tf.reduce_mean(
                tf.keras.losses.sparse_categorical_crossentropy(yb, forward(xb), from_logits=True)
            )
        gs = tape.gradient(err, params)
        opt.apply_gradients(zip(gs, params))
        return err


    for i in range(50):
        pick = rng.integers(0, 600, 32)
        one_batch(series[pick], state[pick])
"""
FLAGGED = "num / den[:, :, None]"
MADE = "wq, wk, wv = (tf.keras.layers.Dense(8, use_bias=False) for _ in range(3))"


def test_each_name_a_generator_unpacks_is_a_layer_of_its_own() -> None:
    spec = spec_of(ATTENTION, FLAGGED)
    assert spec is not None
    kernels = {k: w["shape"][-1] for k, w in spec["weights"].items() if k.endswith(".kernel")}
    assert kernels == {"wq.kernel": 8, "wk.kernel": 8, "wv.kernel": 8, "clf.kernel": 3}
    assert "wq.bias" not in spec["weights"]  # use_bias=False, as each item is made
    assert spec["assumed"] == []


def test_the_generator_made_layers_train_to_the_division_as_early_as_the_program_breaks() -> None:
    [(_, v)] = [(f, v) for f, v in on_line(verified(ATTENTION), FLAGGED, ATTENTION)]
    assert by_training(v), v.get("detail")
    assert v["observed"]["step"] <= 3
    clean = ATTENTION.replace(FLAGGED, "num / (den[:, :, None] + 1e-6)")
    assert not [v for _, v in verified(clean) if v.get("status") == "confirmed"]


@pytest.mark.parametrize(
    ("made", "widths"),
    [
        # a list comprehension, the loop variable read: each item's own width
        ("wq, wk, wv = [tf.keras.layers.Dense(4 * (i + 1), use_bias=False) for i in range(3)]",
         [4, 8, 12]),
        # a literal tuple of widths
        ("wq, wk, wv = (tf.keras.layers.Dense(w, use_bias=False) for w in (8, 6, 4))", [8, 6, 4]),
        ("wq, wk, wv = (tf.keras.layers.Dense(8, use_bias=False) for _ in range(2, 5))",
         [8, 8, 8]),
    ],
)  # fmt: skip
def test_an_item_that_reads_the_loop_variable_is_read_with_its_value(made, widths) -> None:
    program = ATTENTION.replace(MADE, made)
    assert program != ATTENTION
    spec = spec_of(program, FLAGGED)
    assert spec is not None
    assert [spec["weights"][f"{n}.kernel"]["shape"][-1] for n in ("wq", "wk", "wv")] == widths


@pytest.mark.parametrize(
    "made",
    [
        # one layer three times, not three layers
        "wq, wk, wv = [tf.keras.layers.Dense(8, use_bias=False)] * 3",
        # more items than names: the program fails to unpack them
        "wq, wk, wv = (tf.keras.layers.Dense(8, use_bias=False) for _ in range(4))",
        # which items there are depends on a condition
        "wq, wk, wv = (tf.keras.layers.Dense(8, use_bias=False) for i in range(4) if i != 2)",
        # a count the code does not fix
        "wq, wk, wv = (tf.keras.layers.Dense(8, use_bias=False) for _ in range(len(state)))",
    ],
)
def test_a_comprehension_not_read_item_by_item_leaves_the_rung_out(made: str) -> None:
    program = ATTENTION.replace(MADE, made)
    assert program != ATTENTION
    assert spec_of(program, FLAGGED) is None


MODEL = """\
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    feats = rng.normal(0, 1, (512, 6)).astype("float32")
    kind = rng.integers(0, 3, 512)


    class Net(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.a, self.b = (tf.keras.layers.Dense(4) for _ in range(2))
            self.head = tf.keras.layers.Dense(3)

        def call(self, x):
            h = tf.nn.relu(self.b(self.a(x)))
            return self.head(h / tf.reduce_sum(h, axis=1, keepdims=True))


    net = Net()
    opt = tf.keras.optimizers.Adam(1e-2)


    def step(xb, yb):
        with tf.GradientTape() as tape:
            out = net(xb)
            loss = tf.reduce_mean(
                tf.keras.losses.sparse_categorical_crossentropy(yb, out, from_logits=True)
            )
        gs = tape.gradient(loss, net.trainable_variables)
        opt.apply_gradients(zip(gs, net.trainable_variables))


    for i in range(100):
        idx = rng.integers(0, 512, 32)
        step(feats[idx], kind[idx])
"""


def test_attributes_a_generator_unpacks_are_layers_of_their_own() -> None:
    spec = spec_of(MODEL, "h / tf.reduce_sum(h")
    assert spec is not None
    assert spec["weights"]["net.a.kernel"]["shape"] == [None, 4]
    assert spec["weights"]["net.b.kernel"]["shape"] == [4, 4]
    assert {"net.a.bias", "net.b.bias", "net.head.kernel"} <= set(spec["weights"])
