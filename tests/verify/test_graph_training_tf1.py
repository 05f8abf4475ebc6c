"""Issue 25, confirmation where the graph is trained: a TF1 training graph saved as a
SavedModel keeps its loss, the gradients of it and the optimizer's updates.  The search feeds
the loss valid labels and looks for an input inside the box that makes d(loss)/d(a weight
the op reads) non-finite, or d(loss)/d(the op's input) when no weight is upstream; a gradient
no loss the graph keeps computes is a condition, not a confirmation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tensorflow")
import tensorflow as tf
from conftest import ROOT, run_cli

from tfnumlint.discovery import Candidate
from tfnumlint.models import ModelOptions, to_result
from tfnumlint.ruledocs import all_docs
from tfnumlint.verify.graphs.lint import lint_model
from tfnumlint.verify.graphs.loader import load

FEATURES = 4
CLASSES = 3


def training_graph(path: Path, head_scale: float) -> Path:
    """A classifier trained by SGD on a hand-written cross-entropy; the features the head
    reads are norms, some of them hazards:

    - ``trained_norm``: the norm of a layer's output (the weight ``enc`` upstream), 0 at x = 0;
    - ``raw_norm``: the norm of the raw input (no weight upstream);
    - ``band_norm``: 0 only where every ``(h - 3)² <= 1``, away from the box's corners and 0:
      the climb gets there;
    - ``offset_norm``: 0 only at h = 3.3, which no input tried hits: a condition;
    - ``twin_norm``: the stable twin, an eps inside the sqrt;
    - ``served_norm``: in the serving signature only; no loss reads it.
    """
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, FEATURES], name="x")
        labels = v1.placeholder(tf.float32, [None, CLASSES], name="labels")
        enc = v1.get_variable("enc", initializer=np.eye(FEATURES, dtype=np.float32))
        # the head's last row reads sum(h): large there, the logits saturate at the corners
        # (not at 0)
        rows = np.full((6, 1), 0.01)
        rows[-1] = head_scale
        head = v1.get_variable("head", initializer=(rows * [1, -1, 1]).astype(np.float32))
        h = tf.matmul(x, enc)

        def norm(t, name, eps=None):
            total = tf.reduce_sum(tf.square(t), -1, keepdims=True)
            return tf.sqrt(total if eps is None else total + eps, name=name)

        band = tf.nn.relu(tf.square(h - 3.0) - 1.0)
        features = tf.concat(
            [
                norm(h, "trained_norm"),
                norm(x, "raw_norm"),
                norm(band, "band_norm"),
                norm(h - 3.3, "offset_norm"),
                norm(h, "twin_norm", 1e-6),
                tf.reduce_sum(h, -1, keepdims=True),
            ],
            -1,
        )
        p = tf.nn.softmax(tf.matmul(features, head))
        xent = -tf.reduce_sum(labels * tf.math.log(p, name="log_p"), name="xent")
        v1.train.GradientDescentOptimizer(0.5).minimize(xent)
        served = tf.sqrt(tf.reduce_sum(tf.abs(x), -1), name="served_norm")
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            builder = v1.saved_model.Builder(str(path))
            sig = v1.saved_model.predict_signature_def({"x": x}, {"p": p, "served": served})
            builder.add_meta_graph_and_variables(
                sess, ["serve"], signature_def_map={"serving_default": sig}
            )
            builder.save()
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("tf1_trained")
    return {
        "small": training_graph(root / "small", 0.01),
        "large": training_graph(root / "large", 10.0),
    }


def _findings(path):
    answer = lint_model({"path": str(path), "input_ranges": {}})
    assert "error" not in answer, answer
    return to_result(Candidate(path, path.name), answer, ModelOptions(all_docs())).findings


@pytest.fixture(scope="module")
def small(models):
    return {f.source_line: f for f in _findings(models["small"])}


def test_the_loader_finds_the_loss_its_weights_and_its_labels(models):
    loaded = load(models["small"])
    [trained] = loaded.trained
    assert trained.tensor == "Neg:0"  # the negated sum: what minimize() differentiated
    assert sorted(trained.weights) == ["enc", "head"]
    # the loss was frozen with the model: its ops and its labels placeholder are in the graph
    names = {n.name for n in loaded.graph_def.node}
    assert {"Neg", "log_p", "labels"} <= names
    assert [i.label for i in loaded.inputs] == ["x"]  # the labels are no model input


def test_a_weight_upstream_is_confirmed_by_the_training_step(small):
    v = small["trained_norm"].verification
    assert v.status == "confirmed" and v.symptom == "nan-gradient"
    assert (
        "a training step makes the gradient of the graph's loss `Neg` with respect to the "
        "weight `enc` nan" in v.detail
    )
    assert v.observed["weight"] == "enc" and v.observed["loss"] == "the graph's loss `Neg`"
    assert v.inputs["x"] == [0.0] * FEATURES
    # the labels are fed as one-hot rows: they multiply a log in the loss
    assert sorted(v.inputs["labels"]) == [0.0, 0.0, 1.0]
    assert v.observed["targets"] == {"labels": "one-hot rows"}


def test_without_a_weight_upstream_the_loss_gradient_through_the_op_is_the_symptom(small):
    v = small["raw_norm"].verification
    assert v.status == "confirmed"
    assert "the gradient of the graph's loss `Neg` with respect to the op's input" in v.detail
    assert "loss-gradient" in v.observed and "gradient" not in v.observed
    assert v.inputs["x"] == [0.0] * FEATURES


def test_the_climb_reaches_a_zero_no_corner_has(small):
    v = small["band_norm"].verification
    assert v.status == "confirmed" and "training" in v.observed
    x = np.asarray(v.inputs["x"])
    assert np.all((x >= 2.0) & (x <= 4.0)), x  # inside the band, far from corners and 0


def test_a_zero_no_input_hits_is_a_condition(small):
    v = small["offset_norm"].verification
    assert v.status == "inconclusive"
    assert v.detail.startswith("conditional: the sqrt input range [0, ")
    assert "the loss gradient was searched too" in v.detail


def test_an_op_no_loss_reads_is_a_condition_not_a_confirmation(small):
    """Its own derivative is infinite at 0, but no training step differentiates it."""
    v = small["served_norm"].verification
    assert v.status == "inconclusive" and v.symptom == "inf-gradient"
    assert "no loss the model keeps (the graph's loss `Neg`) reads served_norm" in v.detail
    assert v.inputs["x"] == [0.0] * FEATURES


def test_the_twin_and_small_logits_are_refuted_by_range(small):
    twin = small["twin_norm"].verification
    assert twin.status == "refuted"
    # a sum over an axis of 4 features in [0, 100] is at most 400 (not unbounded)
    assert "the sqrt input stays in [1e-06, 400]" in twin.detail
    assert small["log_p"].verification.status == "refuted"


def test_large_weights_confirm_the_log_and_keep_each_symptom_to_its_op(models):
    """With large head weights the log of the softmax is -inf at a corner, which makes the
    loss and every gradient non-finite there; that input is not the sqrt's witness: a loss
    gradient counts for an op only when it reaches the op finite."""
    found = {f.source_line: f for f in _findings(models["large"])}
    log = found["log_p"].verification
    assert log.status == "confirmed" and log.observed["value"] == -np.inf
    trained = found["trained_norm"].verification
    assert trained.status == "confirmed" and trained.inputs["x"] == [0.0] * FEATURES


def test_the_reproducer_shows_the_loss_gradient(models, tmp_path):
    env = {"TFNUMLINT_CACHE_DIR": str(tmp_path / "cache")}
    model = models["small"]
    proc = run_cli(
        "--format", "json", "--select", "TNL202", "--emit-repro", str(tmp_path / "repro"),
        str(model), cwd=tmp_path, env=env,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    scripts = {
        f["graph"]["op"]: f["repro"] for f in json.loads(proc.stdout)["findings"] if f.get("repro")
    }
    for op, shown in (("trained_norm", "by enc:0"), ("raw_norm", "by Sum_1:0")):
        path = Path(scripts[op])
        path = path if path.is_absolute() else tmp_path / path
        run = subprocess.run(
            [sys.executable, str(path)], capture_output=True, text=True, cwd=tmp_path,
            timeout=300, env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )  # fmt: skip
        assert run.returncode == 1, (run.stdout, run.stderr)
        assert f"the gradient of the training loss {shown}" in run.stdout
