"""Issue 22, item 2: a gradient symptom needs a path to a differentiation root; names and
paths never decide.  Static side only (the probe annotations the verdict reads)."""

from __future__ import annotations

import pytest
from test_reachability import one_probe

from tfnumlint.verify import gradient_gate

BODY = """\
    import tensorflow as tf


    def {name}(labels, logits):
        return -tf.reduce_mean(labels * tf.math.log(tf.sigmoid(logits)))
    """

TAPE = """\
    import tensorflow as tf

    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    opt = tf.keras.optimizers.Adam()


    def {name}(labels, logits):
        return -tf.reduce_mean(labels * tf.math.log(tf.sigmoid(logits)))


    def step(x, y):
        with tf.GradientTape() as tape:
            loss = {name}(y, model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
    """

METRIC_AFTER_STEP = """\
    import tensorflow as tf

    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])


    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        spread = tf.sqrt(tf.reduce_sum(tf.square(model(x) - y)))
        return grads, spread
    """

SESSION_ONLY = """\
    import tensorflow as tf

    x = tf.compat.v1.placeholder(tf.float32, [None, 3])
    w = tf.Variable(tf.ones([3, 1]))
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
    train = tf.compat.v1.train.AdamOptimizer(0.1).minimize(loss)
    spread = tf.sqrt(tf.reduce_sum(tf.square(tf.matmul(x, w))))
    """


def _flow(code: str, rule: str, path: str = "model.py") -> tuple[str | None, bool]:
    """(why no gradient flows, whether that reason only makes the finding inconclusive)."""
    probe = one_probe(code, rule, path=path)
    assert "conditional" not in probe  # no caller in the project is no evidence: no gate
    return probe.get("no_gradient"), bool(probe.get("no_gradient_likely"))


CONFIRMED = {"status": "confirmed", "detail": "at x = 0", "inputs": {}, "symptom": "nan-gradient"}


@pytest.mark.parametrize("name", ["bce_loss", "bce", "qzxv"])
def test_a_free_function_is_not_gated_whatever_its_name(name):
    """`log(1 - sigmoid(logits))` in `def bce_loss` and in `def bce`: one verdict."""
    assert _flow(BODY.format(name=name), "TNL101") == (None, False)
    out = gradient_gate.apply(one_probe(BODY.format(name=name), "TNL101"), dict(CONFIRMED))
    assert out["status"] == "confirmed"


@pytest.mark.parametrize("name", ["feature_loss", "feature_matching_loss", "qzxv"])
def test_a_loss_called_inside_a_gradient_tape_is_reached_whatever_its_name(name):
    assert _flow(TAPE.format(name=name), "TNL101") == (None, False)


@pytest.mark.parametrize("path", ["model.py", "tests/test_model.py", "optimization/step.py"])
def test_paths_never_refute_a_reached_loss(path):
    assert _flow(TAPE.format(name="f"), "TNL101", path=path) == (None, False)


@pytest.mark.parametrize("path", ["model.py", "tests/test_model.py", "optimization/step.py"])
def test_paths_never_refute_a_free_function(path):
    assert _flow(BODY.format(name="f"), "TNL101", path=path) == (None, False)


def test_a_value_computed_after_tape_gradient_has_no_path_to_a_root():
    reason, likely = _flow(METRIC_AFTER_STEP, "TNL202")
    assert likely is False
    assert reason.startswith("no path to a differentiation root: `spread`")


def test_a_graph_value_only_fetched_has_no_path_to_a_root():
    reason, likely = _flow(SESSION_ONLY, "TNL202")
    assert likely is False
    assert reason.startswith("no path to a differentiation root: `spread`")


def test_the_unreached_gradient_symptom_is_refuted_and_a_value_symptom_is_not():
    probe = one_probe(SESSION_ONLY, "TNL202")
    confirmed = {"status": "confirmed", "detail": "at x = 0", "inputs": {}}
    assert (
        gradient_gate.apply(probe, {**confirmed, "symptom": "nan-gradient"})["status"] == "refuted"
    )
    assert (
        gradient_gate.apply(probe, {**confirmed, "symptom": "nan-value"})["status"] == "confirmed"
    )


def test_a_free_gradient_symptom_keeps_its_status():
    """A function with no caller here may be a library's loss: the witness is not gated (the
    earlier rule made it conditional, so every library function turned inconclusive)."""
    probe = one_probe(BODY.format(name="bce"), "TNL101")
    out = gradient_gate.apply(probe, dict(CONFIRMED))
    assert out["status"] == "confirmed" and "conditional" not in out["detail"]


def test_the_call_of_a_keras_layer_is_a_root():
    code = """\
        import tensorflow as tf


        class Head(tf.keras.layers.Layer):
            def call(self, logits):
                return tf.math.log(tf.sigmoid(logits))
        """
    assert _flow(code, "TNL101") == (None, False)


def test_a_loss_passed_to_compile_is_a_root():
    code = """\
        import tensorflow as tf


        def q(y, p):
            return -tf.reduce_mean(y * tf.math.log(tf.sigmoid(p)))


        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss=q)
        """
    assert _flow(code, "TNL101") == (None, False)


def test_a_helper_called_only_from_an_unreached_function_is_refuted():
    code = """\
        import tensorflow as tf


        def g(a, b):
            return tf.sqrt(tf.reduce_sum(tf.square(a - b)))


        def report(a, b):
            return float(g(a, b))


        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mse")
        print(report(tf.ones([3]), tf.zeros([3])))
        """
    reason, likely = _flow(code, "TNL202")
    assert likely is False
    assert "`g` is only called from `report`" in reason


def test_a_helper_of_a_free_function_is_not_gated():
    code = """        import tensorflow as tf


        def g(a, b):
            return tf.sqrt(tf.reduce_sum(tf.square(a - b)))


        def distance(a, b):
            return g(a, b)
        """
    assert _flow(code, "TNL202") == (None, False)
