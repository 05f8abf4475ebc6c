"""The training rung through a model's own ``train_step``: Keras's ``fit`` calls the hook with
each batch ``(x, y)`` and the optimizer ``compile`` set, so the objective is the loss the hook
takes a tape's gradient of, with ``self(x)`` the model's ``call`` applied to ``x``.

A hook the slice cannot follow (a loop, a second model) leaves the program without an
objective: no training rung, and the rungs below decide.
"""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")

from test_training_rung import by_training, on_line, verified

# raw usage figures of a few hundred, two classes; a hand-written softmax over the head's
# logits: exp overflows in the program's first steps
STEPPED = """\
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(3)
    usage = rng.uniform(100.0, 400.0, (2000, 8)).astype("float32")
    labels = rng.integers(0, 2, 2000)


    class Scorer(tf.keras.Model):
        def __init__(self, classes):
            super().__init__()
            self.hidden = tf.keras.layers.Dense(16, activation="relu")
            self.head = tf.keras.layers.Dense(classes)

        def call(self, x):
            e = tf.exp(self.head(self.hidden(x)))
            return e / tf.reduce_sum(e, axis=-1, keepdims=True)

        def train_step(self, data):
            x, y = data
            with tf.GradientTape() as tape:
                p = self(x, training=True)
                picked = tf.reduce_sum(tf.one_hot(y, 2) * p, axis=-1)
                loss = -tf.reduce_mean(tf.math.log(picked + 1e-7))
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            return {"loss": loss}


    model = Scorer(2)
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-3))
    model.fit(usage, labels, batch_size=64, epochs=2)
"""

HAZARD = "e = tf.exp("


def exp_verdicts(program: str) -> list[dict]:
    """The verdicts of the findings on the hand-written softmax's exp."""
    return [v for _, v in on_line(verified(program), HAZARD, program)]


def test_a_model_trained_by_its_own_train_step_is_confirmed_by_its_training() -> None:
    verdicts = exp_verdicts(STEPPED)
    assert verdicts and any(by_training(v) for v in verdicts), [v.get("detail") for v in verdicts]
    v = next(v for v in verdicts if by_training(v))
    assert v["observed"]["step"] <= 10  # raw features of a few hundred: in its first steps
    assert "batches of 64" in v["detail"] and "adam" in v["detail"]


def test_the_pair_indexed_and_without_a_training_flag_is_the_same_objective() -> None:
    program = STEPPED.replace("x, y = data", "x, y = data[0], data[1]").replace(
        "self(x, training=True)", "self(x)"
    )
    assert "data[0], data[1]" in program and "self(x)\n" in program
    verdicts = exp_verdicts(program)
    assert any(by_training(v) for v in verdicts), [v.get("detail") for v in verdicts]


def test_the_fused_twin_has_nothing_to_confirm() -> None:
    fused = STEPPED.replace(
        "e = tf.exp(self.head(self.hidden(x)))\n"
        "            return e / tf.reduce_sum(e, axis=-1, keepdims=True)",
        "return self.head(self.hidden(x))",
    ).replace(
        "picked = tf.reduce_sum(tf.one_hot(y, 2) * p, axis=-1)\n"
        "                loss = -tf.reduce_mean(tf.math.log(picked + 1e-7))",
        "loss = tf.reduce_mean(\n"
        "                    tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=p)\n"
        "                )",
    )
    assert "tf.exp" not in fused and "sparse_softmax" in fused
    assert not [v for _, v in verified(fused) if v.get("status") == "confirmed"]


def test_renaming_the_class_and_its_own_methods_keeps_the_verdict() -> None:
    """Only the framework hooks (``call``, ``train_step``) keep their names."""
    program = STEPPED.replace(
        "return e / tf.reduce_sum(e, axis=-1, keepdims=True)",
        "return self.norm(e)\n\n"
        "        def norm(self, e):\n"
        "            return e / tf.reduce_sum(e, axis=-1, keepdims=True)",
    )
    renames = {"Scorer": "Qz", "norm": "m1", "hidden": "l1", "head": "l2", "classes": "k",
               "usage": "aa", "labels": "bb", "model": "mm", "picked": "t", "data": "batch",
               "grads": "g", "tape": "tp"}  # fmt: skip
    renamed = program
    for old, new in renames.items():
        renamed = renamed.replace(old, new)
    before, after = exp_verdicts(program), exp_verdicts(renamed)
    assert any(by_training(v) for v in before), [v.get("detail") for v in before]
    assert [(v["status"], by_training(v)) for v in before] == [
        (v["status"], by_training(v)) for v in after
    ]
    assert [(v.get("observed") or {}).get("step") for v in before] == [
        (v.get("observed") or {}).get("step") for v in after
    ]


UNFOLLOWED = {
    "a loop": (
        "            grads = tape.gradient(loss, self.trainable_variables)\n",
        "            for _ in range(2):\n"
        "                grads = tape.gradient(loss, self.trainable_variables)\n",
    ),
    "a second model": (
        "                p = self(x, training=True)\n",
        "                p = self(x, training=True) * tf.sigmoid(other(x))\n",
    ),
    "a subset of the weights": (
        "grads = tape.gradient(loss, self.trainable_variables)",
        "grads = tape.gradient(loss, self.head.trainable_variables)",
    ),
    "the batch's third item": (
        "                loss = -tf.reduce_mean(tf.math.log(picked + 1e-7))\n",
        "                loss = -tf.reduce_mean(tf.math.log(picked + 1e-7) * data[2])\n",
    ),
}


@pytest.mark.parametrize("change", list(UNFOLLOWED), ids=list(UNFOLLOWED))
def test_a_train_step_the_slice_cannot_follow_has_no_training_rung(change: str) -> None:
    old, new = UNFOLLOWED[change]
    program = STEPPED.replace(old, new).replace(
        "model = Scorer(2)",
        "other = tf.keras.Sequential([tf.keras.layers.Dense(2)])\n    model = Scorer(2)",
    )
    assert new in program
    verdicts = exp_verdicts(program)
    assert verdicts  # linted and verified, no crash
    assert not any(by_training(v) for v in verdicts), [v.get("detail") for v in verdicts]


XENT = (
    "def xent(y_true, y_pred):\n"
    "        return -tf.math.log(tf.reduce_sum(tf.one_hot(y_true, 2) * y_pred, -1) + 1e-7)\n"
    "    model.compile(optimizer=tf.keras.optimizers.Adam(1e-3), loss=xent)"
)


def test_the_compiled_loss_called_in_the_hook_is_compiles_own_loss() -> None:
    """The model returns logits; the hook makes probabilities of its layers' output by hand and
    hands them to compile's loss: the objective is that loss of the hook's probabilities, not
    compile's loss of the model's logits."""
    program = (
        STEPPED.replace(
            "e = tf.exp(self.head(self.hidden(x)))\n"
            "            return e / tf.reduce_sum(e, axis=-1, keepdims=True)",
            "return self.head(self.hidden(x))",
        )
        .replace(
            "p = self(x, training=True)\n"
            "                picked = tf.reduce_sum(tf.one_hot(y, 2) * p, axis=-1)\n"
            "                loss = -tf.reduce_mean(tf.math.log(picked + 1e-7))",
            "e = tf.exp(self.head(self.hidden(x)))\n"
            "                loss = self.compiled_loss(y, e / tf.reduce_sum(e, -1, keepdims=True))",
        )
        .replace("model.compile(optimizer=tf.keras.optimizers.Adam(1e-3))", XENT)
    )
    assert "self.compiled_loss(y, e /" in program and "loss=xent" in program
    verdicts = exp_verdicts(program)
    assert any(by_training(v) for v in verdicts), [v.get("detail") for v in verdicts]


def test_a_train_step_under_a_compiled_loss_is_not_trained_as_that_loss() -> None:
    """A class that overrides ``train_step`` is not trained by compile's loss: a hook the slice
    cannot follow leaves no objective, whatever ``loss=`` compile is given."""
    program = STEPPED.replace(
        "            grads = tape.gradient(loss, self.trainable_variables)\n",
        "            for _ in range(2):\n"
        "                grads = tape.gradient(loss, self.trainable_variables)\n",
    ).replace("model.compile(optimizer=tf.keras.optimizers.Adam(1e-3))", XENT)
    assert "for _ in range(2)" in program
    verdicts = exp_verdicts(program)
    assert not any(by_training(v) for v in verdicts), [v.get("detail") for v in verdicts]


# readings of a few hundred over 6 periods, pooled with weights from a hand-written softmax
# over the periods; Keras's sparse cross-entropy of the head's logits, called as a function
POOLED = """\
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(5)
    readings = rng.uniform(150.0, 450.0, (1500, 6, 3)).astype("float32")
    kinds = rng.integers(0, 4, 1500)


    class Pool(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.weigh = tf.keras.layers.Dense(1)
            self.feat = tf.keras.layers.Dense(8, activation="tanh")
            self.head = tf.keras.layers.Dense(4)

        def call(self, x):
            e = tf.exp(self.weigh(x))
            w = e / tf.reduce_sum(e, axis=1, keepdims=True)
            return self.head(tf.reduce_sum(w * self.feat(x), axis=1))

        def train_step(self, data):
            x, y = data
            with tf.GradientTape() as tape:
                logits = self(x, training=True)
                ce = tf.keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
                loss = tf.reduce_mean(ce)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            return {"loss": loss}


    model = Pool()
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-3))
    model.fit(readings, kinds, epochs=2)
"""


def test_a_pooled_model_with_keras_sparse_cross_entropy_is_confirmed_by_its_training() -> None:
    """The pooled value's width is the feature layer's (the period axis is summed away, the
    weights' width of 1 broadcasts), the class ids are one-hot over the head's 4 logits, and
    fit's batch is Keras's default."""
    verdicts = exp_verdicts(POOLED)
    assert any(by_training(v) for v in verdicts), [v.get("detail") for v in verdicts]
    v = next(v for v in verdicts if by_training(v))
    assert v["observed"]["step"] <= 10 and "batches of 32" in v["detail"]


def test_the_pooled_models_softmax_twin_has_nothing_to_confirm() -> None:
    twin = POOLED.replace(
        "e = tf.exp(self.weigh(x))\n            w = e / tf.reduce_sum(e, axis=1, keepdims=True)",
        "w = tf.nn.softmax(self.weigh(x), axis=1)",
    )
    assert "tf.exp" not in twin
    assert not [v for _, v in verified(twin) if v.get("status") == "confirmed"]
