"""Issue 25, the training rules on graphs: where a model file keeps its optimizer (a TF1
training graph's update ops, a ``.keras`` compile config), its learning rate is checked by the
same rules as in source (TNL501 saturation, TNL502 clipping, TNL505 SGD divergence), and
verified by the same recipes, with the spec read from the graph: the optimizer's
hyper-parameters, the dense stack its loss trains, the loss's form, the features' box."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("tensorflow")
import keras
import tensorflow as tf
from conftest import run_cli

from tfnumlint.verify.graphs.loader import load

v1 = tf.compat.v1


def _save_tf1(graph, sess, path, inputs, outputs):
    builder = v1.saved_model.Builder(str(path))
    sig = v1.saved_model.predict_signature_def(inputs, outputs)
    builder.add_meta_graph_and_variables(
        sess, ["serve"], signature_def_map={"serving_default": sig}
    )
    builder.save()


def tf1_classifier(path, lr: float, clip: bool = False):
    """Softmax regression on a hand-written cross-entropy, trained by Adam."""
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, 8], name="x")
        labels = v1.placeholder(tf.float32, [None, 3], name="labels")
        w = v1.get_variable("w", [8, 3])
        b = v1.get_variable("b", [3], initializer=v1.zeros_initializer())
        p = tf.nn.softmax(tf.matmul(x, w) + b)
        loss = -tf.reduce_sum(labels * tf.math.log(p))
        opt = v1.train.AdamOptimizer(lr)
        pairs = opt.compute_gradients(loss)
        grads = [g for g, _ in pairs]
        if clip:
            grads, _ = tf.clip_by_global_norm(grads, 1.0)
        opt.apply_gradients(zip(grads, [v for _, v in pairs], strict=True))
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            _save_tf1(graph, sess, path, {"x": x}, {"p": p})
    return path


def tf1_regression(path, lr: float):
    """A linear regression on a squared error, trained by plain SGD."""
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, 1], name="x")
        t = v1.placeholder(tf.float32, [None, 1], name="t")
        w = v1.get_variable("w", [1, 1], initializer=v1.zeros_initializer())
        b = v1.get_variable("b", [1], initializer=v1.zeros_initializer())
        y = tf.matmul(x, w) + b
        loss = tf.reduce_mean(tf.square(y - t))
        v1.train.GradientDescentOptimizer(lr).minimize(loss)
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            _save_tf1(graph, sess, path, {"x": x}, {"y": y})
    return path


def keras_deep(path, clip: bool):
    """Ten Dense(64, relu) layers under Adam at lr 0.1 (TNL502's confirmed case in source)."""
    layers = [keras.layers.Dense(64, activation="relu") for _ in range(10)]
    model = keras.Sequential([keras.Input((16,)), *layers, keras.layers.Dense(1)])
    opt = keras.optimizers.Adam(0.1, clipnorm=1.0) if clip else keras.optimizers.Adam(0.1)
    model.compile(optimizer=opt, loss="mse")
    model.save(path)
    return path


def keras_pixels(path, rescale: bool):
    """A linear regression on uint8 inputs by SGD at lr 1e-4, raw or rescaled to [0, 1]."""
    x = keras.Input((4,), dtype="uint8", name="pixels")
    h = keras.layers.Rescaling(1 / 255.0)(x) if rescale else x
    model = keras.Model(x, keras.layers.Dense(1)(h))
    model.compile(optimizer=keras.optimizers.SGD(1e-4), loss="mse")
    model.save(path)
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("training_rules")
    (root / "models").mkdir()
    (root / "regression").mkdir()
    m = root / "models"
    tf1_classifier(m / "adam_high", 0.01)
    tf1_classifier(m / "adam_clipped", 0.01, clip=True)
    tf1_classifier(m / "adam_low", 0.001)
    keras_deep(m / "deep.keras", clip=False)
    keras_deep(m / "deep_clipped.keras", clip=True)
    keras_pixels(m / "pixels.keras", rescale=False)
    keras_pixels(m / "pixels_scaled.keras", rescale=True)
    tf1_regression(root / "regression" / "sgd", 0.1)
    return root


def _lint(root, *args):
    proc = run_cli(
        "--format", "json", "--select", "TNL403,TNL501,TNL502,TNL505", *args, cwd=root,
        env={"TFNUMLINT_CACHE_DIR": str(root / "cache")},
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    out: dict[tuple[str, str], dict] = {}
    for f in json.loads(proc.stdout)["findings"]:
        out[f["path"].split("/")[-1], f["rule"]] = f
    return out


@pytest.fixture(scope="module")
def findings(built):
    return _lint(built, "models")


def test_the_loader_reads_the_optimizer_of_a_tf1_graph(built):
    [adam] = load(built / "models" / "adam_high").optimizers
    assert adam["op"] == "Adam" and adam["family"] == "adam"
    assert adam["learning_rate"] == 0.01 and adam["epsilon"] == 1e-08
    assert sorted(adam["variables"]) == ["b", "w"] and adam["clipping"] is None
    [clipped] = load(built / "models" / "adam_clipped").optimizers
    assert clipped["clipping"] == "its gradient is scaled by its norm"
    [sgd] = load(built / "regression" / "sgd").optimizers
    assert sgd["family"] == "sgd" and sgd["learning_rate"] == 0.1


def test_an_unclipped_deep_stack_at_a_high_rate_is_confirmed(findings):
    f = findings["deep.keras", "TNL502"]
    v = f["verification"]
    assert "the compile config's optimizer (Adam) is adam at learning rate 0.1" in f["message"]
    assert v["status"] == "confirmed" and v["symptom"] == "exploding-gradient"
    # the stack the recipe trained is the one read from the graph
    assert v["inputs"]["stack"] == {"inputs": 16, "layers": [[64, "relu"]] * 10 + [[1, "linear"]]}
    assert "10 Dense(64, relu) layers" in v["detail"]


def test_clipping_in_the_config_or_the_graph_clears_tnl502(findings):
    assert ("deep_clipped.keras", "TNL502") not in findings
    assert ("adam_clipped", "TNL502") not in findings
    assert ("adam_high", "TNL502") in findings  # the same graph without the clip


def test_a_hand_written_log_loss_on_softmax_at_a_high_rate_is_tnl501(findings):
    f = findings["adam_high", "TNL501"]
    assert "learning rate 0.01 of the optimizer `Adam` the graph keeps" in f["message"]
    assert "softmax outputs and a hand-written log(p) loss in the graph" in f["message"]
    v = f["verification"]
    # verified by the saturation recipe (never refuted: a longer run may still get there)
    assert v["status"] in ("confirmed", "inconclusive")
    assert "the softmax output layer (3 units, 8 inputs)" in v["detail"]
    assert "as the model's graph writes it" in v["detail"]
    assert ("adam_low", "TNL501") not in findings  # lr 0.001 is below the threshold


def test_sgd_on_raw_pixels_diverges_and_rescaled_pixels_do_not(findings):
    f = findings["pixels.keras", "TNL505"]
    assert "`pixels` in [0, 255] (its dtype uint8)" in f["message"]
    v = f["verification"]
    assert v["status"] == "confirmed" and v["symptom"] == "diverges"
    assert v["inputs"]["features"] == "uniform in [0, 255] (its dtype uint8)"
    assert v["observed"]["growth_per_step"] > 10  # geometric, several steps before inf
    assert ("pixels_scaled.keras", "TNL505") not in findings


def test_sgd_on_features_of_unknown_scale_states_the_condition(built):
    f = _lint(built, "regression")["sgd", "TNL505"]
    assert "diverges once the features' RMS exceeds 3.16" in f["message"]
    v = f["verification"]
    assert v["status"] == "inconclusive"
    assert "diverges once the features' RMS exceeds 3.16" in v["detail"]


def test_sgd_on_an_input_range_is_simulated(built):
    f = _lint(built, "--input-range", "x=-8:8", "regression")["sgd", "TNL505"]
    v = f["verification"]
    assert v["status"] == "confirmed" and v["symptom"] == "diverges"
    assert "uniform in [-8, 8] (--input-range)" in v["detail"]
    assert np.isfinite(v["observed"]["control_last_loss"])
