"""Where the graph is trained (a ``.keras`` file compiled before saving keeps its loss), the
search looks for an input that makes the gradient of that loss with respect to a weight
non-finite: what a training step on that input computes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")
import keras
from conftest import ROOT, run_cli
from keras import ops

from tfnumlint.discovery import Candidate
from tfnumlint.models import ModelOptions, to_result
from tfnumlint.ruledocs import all_docs
from tfnumlint.verify.graphs.lint import lint_model
from tfnumlint.verify.graphs.training import _kind, loss_name

FEATURES = 4


def _norms_model() -> keras.Model:
    """Two norms at zero: one of a layer's output (weights upstream), one of the raw input."""
    x = keras.Input((FEATURES,), name="x")
    h = keras.layers.Dense(FEATURES, name="enc")(x)
    trained = ops.sqrt(ops.sum(ops.square(h), axis=-1, keepdims=True))
    raw = ops.sqrt(ops.sum(ops.square(x), axis=-1, keepdims=True))
    y = keras.layers.Dense(1, name="head")(ops.concatenate([trained, raw], axis=-1))
    return keras.Model(x, y, name="norms")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("trained")
    model = _norms_model()
    model.save(root / "plain.keras")  # not compiled: no loss kept
    model.compile(optimizer="adam", loss="mse")
    model.save(root / "trained.keras")
    return root


def _norm_findings(path):
    """The TNL202 findings of a saved model, linted as the worker does."""
    answer = lint_model({"path": str(path), "input_ranges": {}})
    found = to_result(Candidate(path, path.name), answer, ModelOptions(all_docs())).findings
    return [f for f in found if f.rule == "TNL202"]


def test_a_trained_model_is_confirmed_by_its_loss_gradient(models):
    sqrts = _norm_findings(models / "trained.keras")
    training = [f for f in sqrts if "training" in (f.verification.observed or {})]
    [trained] = training  # only the norm with weights upstream is a training symptom
    v = trained.verification
    assert v.status == "confirmed" and v.symptom == "nan-gradient"
    assert "a training step makes the gradient of the model's loss (mse)" in v.detail
    assert "a weight of layer `enc`" in v.detail
    assert v.observed["weight"].startswith("norms_1/enc_1/")
    assert "y_true" in v.inputs and v.inputs["x"] == [0.0] * FEATURES
    assert v.observed["loss"] == "the model's loss (mse)"
    # the raw input's norm has no weight upstream: no training step computes its gradient;
    # the symptom is the loss's gradient by the op's input (what the backward pass carries
    # through the op), not the op's local derivative
    [raw] = [f for f in sqrts if f is not trained]
    r = raw.verification
    assert r.status == "confirmed" and r.symptom in ("inf-gradient", "nan-gradient")
    assert "the gradient of the model's loss (mse) with respect to the op's input" in r.detail
    assert "a training step does not compute it" in r.detail
    assert "training" not in r.observed and "loss-gradient" in r.observed
    assert "y_true" in r.inputs  # the loss needs its target


def test_without_a_kept_loss_the_op_gradient_is_the_symptom(models):
    sqrts = _norm_findings(models / "plain.keras")
    assert len(sqrts) == 2
    for f in sqrts:
        assert f.verification.status == "confirmed"
        assert "training" not in f.verification.observed
        assert "a training step" not in f.verification.detail


def test_the_reproducer_shows_the_training_gradient(models):
    env = {"TFNUMLINT_CACHE_DIR": str(models / "cache")}
    proc = run_cli(
        "--format", "json", "--select", "TNL202", "--emit-repro", "repro", "trained.keras",
        cwd=models, env=env,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    [script] = [
        f["repro"]
        for f in json.loads(proc.stdout)["findings"]
        if "training" in f["verification"]["observed"]
    ]
    path = Path(script) if Path(script).is_absolute() else models / script
    run = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, cwd=models, timeout=300,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )  # fmt: skip
    assert run.returncode == 1, (run.stdout, run.stderr)
    assert "the gradient of the training loss by norms_1/enc_1/" in run.stdout
    assert "non-finite" in run.stdout


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ("mse", "free"),
        ("sparse_categorical_crossentropy", "index"),
        ({"module": "keras.losses", "class_name": "CategoricalCrossentropy",
          "config": {"name": "categorical_crossentropy"}}, "onehot"),
        ("binary_crossentropy", "unit"),
    ],
)  # fmt: skip
def test_which_targets_a_loss_takes(spec, kind):
    name = loss_name(spec)
    assert name is not None and _kind(name) == kind


def test_a_loss_outside_keras_is_not_built():
    assert loss_name({"module": "my_losses", "class_name": "Focal", "config": {}}) is None
    assert loss_name(None) is None
