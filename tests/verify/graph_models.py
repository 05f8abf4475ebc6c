"""Small models with one hazard per rule family and their stable twins, built with TensorFlow
and saved in every format that applies (SavedModel, .keras, frozen .pb)."""

from __future__ import annotations

from pathlib import Path

import keras
import numpy as np
import tensorflow as tf
from keras import ops
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

FEATURES = 4
# hazards found in the graph, by rule: every format must show each one
FUNCTIONAL_HAZARDS = {"TNL101", "TNL301", "TNL201", "TNL202", "TNL302", "TNL401"}


def _dense(name: str, units: int, scale: float) -> keras.layers.Dense:
    init = keras.initializers.Constant(scale)
    return keras.layers.Dense(units, name=name, kernel_initializer=init, bias_initializer="zeros")


def _alternating(layer: keras.layers.Dense, scale: float) -> None:
    """Weights +scale / -scale by column: the logits spread apart as the input grows."""
    kernel, bias = layer.get_weights()
    signs = np.where(np.arange(kernel.shape[1]) % 2 == 0, 1.0, -1.0)
    layer.set_weights([np.ones_like(kernel) * signs * scale, np.zeros_like(bias)])


def hazards_block(x, scale: float):
    """One hazard per family, each on its own op."""
    logits = _dense("logits", 3, scale)
    p = keras.layers.Softmax(name="probs")(logits(x))
    log_p = ops.log(p)  # TNL101
    e = ops.exp(_dense("energy", 2, scale)(x))  # TNL301
    ratio = x / ops.sum(x, axis=-1, keepdims=True)  # TNL201
    norm = ops.sqrt(ops.sum(ops.square(x), axis=-1, keepdims=True))  # TNL202
    trap = ops.where(x > 0, ops.log(x), ops.zeros_like(x))  # TNL302
    absorbed = (ops.abs(x) + 1.0) + 1e-10  # TNL401
    return [log_p, e, ratio, norm, trap, absorbed], logits


def twins_block(x):
    """The stable forms: none of them may be reported."""
    lg = _dense("twin_logits", 3, 0.1)(x)
    stable_log = ops.log_softmax(lg)
    soft = ops.softmax(lg)
    ratio = x / (ops.sum(ops.abs(x), axis=-1, keepdims=True) + 1.0)
    norm = ops.sqrt(ops.sum(ops.square(x), axis=-1, keepdims=True) + 1e-6)
    trap = ops.where(x > 0, ops.log(ops.maximum(x, 1e-6)), ops.zeros_like(x))
    guard = ops.log(ops.clip(soft, 1e-7, 1.0))
    return [stable_log, soft, ratio, norm, trap, guard]


def functional(scale: float = 10.0) -> keras.Model:
    x = keras.Input((FEATURES,), name="x")
    outs, logits = hazards_block(x, scale)
    model = keras.Model(x, outs + twins_block(x), name="hazards")
    _alternating(logits, scale)
    return model


def twins_only() -> keras.Model:
    x = keras.Input((FEATURES,), name="x")
    return keras.Model(x, twins_block(x), name="twins")


class Subclassed(keras.Model):
    """The same hazards in a subclassed model (saved as a SavedModel and a frozen .pb only:
    its .keras file would need this class, which the linter never imports)."""

    def __init__(self, scale: float = 10.0):
        super().__init__(name="subclassed")
        self.logits = _dense("logits", 3, scale)
        self.energy = _dense("energy", 2, scale)
        self.scale = scale

    def call(self, x):
        p = ops.softmax(self.logits(x))
        return [
            ops.log(p),
            ops.exp(self.energy(x)),
            x / ops.sum(x, axis=-1, keepdims=True),
            ops.sqrt(ops.sum(ops.square(x), axis=-1, keepdims=True)),
            ops.where(x > 0, ops.log(x), ops.zeros_like(x)),
            (ops.abs(x) + 1.0) + 1e-10,
        ]


def subclassed(scale: float = 10.0) -> keras.Model:
    model = Subclassed(scale)
    model(np.zeros((1, FEATURES), np.float32))
    _alternating(model.logits, scale)
    return model


def concrete(model: keras.Model):
    spec = tf.TensorSpec([None, FEATURES], tf.float32, name="x")
    return tf.function(lambda x: model(x, training=False)).get_concrete_function(spec)


def save_frozen(model: keras.Model, path: Path) -> Path:
    frozen = convert_variables_to_constants_v2(concrete(model))
    path.write_bytes(frozen.graph.as_graph_def().SerializeToString())
    return path


def save_all(model: keras.Model, base: Path, keras_file: bool = True) -> dict[str, Path]:
    """The model as a SavedModel directory, a .keras file (when it applies) and a frozen .pb."""
    out = {"saved_model": base.with_name(base.name + "_sm")}
    model.export(str(out["saved_model"]), verbose=False)
    if keras_file:
        out["keras"] = base.with_suffix(".keras")
        model.save(out["keras"])
    out["pb"] = save_frozen(model, base.with_suffix(".pb"))
    return out


# ---------------------------------------------------------------- a TF1 graph


def tf1_graph(base: Path, eps: float = 1e-8) -> dict[str, Path]:
    """A TF1 graph with the hazards, a float16 underflowing constant and an Adam optimizer on
    float16 variables; saved as a TF1 SavedModel (the optimizer kept) and a frozen .pb."""
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, FEATURES], name="x")
        w = v1.get_variable(
            "w", initializer=(np.full((FEATURES, 3), 10.0) * [1, -1, 1]).astype(np.float32)
        )
        p = tf.nn.softmax(tf.matmul(x, w))
        log_p = tf.math.log(p, name="log_p")  # TNL101
        e = tf.exp(tf.matmul(x, w), name="energy")  # TNL301
        ratio = tf.divide(x, tf.reduce_sum(x, axis=-1, keepdims=True), name="ratio")  # TNL201
        norm = tf.sqrt(tf.reduce_sum(tf.square(x), axis=-1), name="norm")  # TNL202
        trap = tf.where(x > 0, tf.math.log(x), tf.zeros_like(x), name="trap")  # TNL302
        tiny = tf.cast(tf.constant(1e-8), tf.float16)  # TNL402
        half = tf.add(tf.cast(x, tf.float16), tiny, name="half_guard")
        stable = tf.nn.log_softmax(tf.matmul(x, w * 0.01), name="stable")
        h = v1.get_variable("h", initializer=np.ones((FEATURES,), np.float16))
        # the loss reads the gradient hazards: in a trained graph their symptom is the loss's
        # gradient through them (an op no loss reads is only a condition)
        loss = tf.reduce_sum(tf.cast(h, tf.float32) * tf.reduce_sum(x, 0))
        loss += tf.reduce_sum(norm) + tf.reduce_sum(trap)
        train = v1.train.AdamOptimizer(1e-3, epsilon=eps).minimize(loss, var_list=[h])
        outputs = {
            "log_p": log_p, "energy": e, "ratio": ratio, "norm": norm, "trap": trap,
            "half": half, "stable": stable,
        }  # fmt: skip
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(train, {x: np.ones((1, FEATURES), np.float32)})
            sm = base.with_name(base.name + "_tf1_sm")
            builder = v1.saved_model.Builder(str(sm))
            sig = v1.saved_model.predict_signature_def({"x": x}, outputs)
            builder.add_meta_graph_and_variables(
                sess, ["serve"], signature_def_map={"serving_default": sig}
            )
            builder.save()
            frozen = v1.graph_util.convert_variables_to_constants(
                sess, graph.as_graph_def(), [t.op.name for t in outputs.values()]
            )
    pb = base.with_name(base.name + "_tf1.pb")
    pb.write_bytes(frozen.SerializeToString())
    return {"saved_model": sm, "pb": pb}
