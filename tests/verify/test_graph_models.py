"""Saved models linted with their real weights: every hazard in every format, twins clean.

The models are built here with TensorFlow (tests/verify/graph_models.py) and linted by the
worker's model job in-process (``lint_model``), then turned into findings by the same code
the CLI uses (``models.to_result``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("tensorflow")
import graph_models as gm
import keras

from tfnumlint.discovery import Candidate
from tfnumlint.models import ModelOptions, to_result
from tfnumlint.ruledocs import all_docs
from tfnumlint.verify.graphs.lint import lint_model

ALL = frozenset(all_docs())
TF1_HAZARDS = {"TNL101", "TNL201", "TNL202", "TNL301", "TNL302", "TNL402"}


def findings_of(path, ranges=None):
    answer = lint_model({"path": str(path), "input_ranges": ranges or {}})
    assert "error" not in answer, answer
    return to_result(Candidate(path, path.name), answer, ModelOptions(codes=ALL)).findings


def shown(findings):
    return [f for f in findings if f.verification.status != "refuted"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """(model, format) -> findings; each file built and linted once."""
    base = tmp_path_factory.mktemp("models")
    paths = {}
    paths.update(
        {("functional", k): v for k, v in gm.save_all(gm.functional(), base / "f").items()}
    )
    paths.update(
        {("subclassed", k): v for k, v in gm.save_all(gm.subclassed(), base / "s", False).items()}
    )
    paths.update({("tf1", k): v for k, v in gm.tf1_graph(base / "g").items()})
    paths.update({("twins", k): v for k, v in gm.save_all(gm.twins_only(), base / "t").items()})
    return {k: findings_of(p) for k, p in paths.items()}


CASES = [
    ("functional", "saved_model"),
    ("functional", "keras"),
    ("functional", "pb"),
    ("subclassed", "saved_model"),
    ("subclassed", "pb"),
    ("tf1", "saved_model"),
    ("tf1", "pb"),
]


@pytest.mark.parametrize(("model", "fmt"), CASES)
def test_every_hazard_is_found_and_confirmed_in_every_format(saved, model, fmt):
    expected = TF1_HAZARDS if model == "tf1" else gm.FUNCTIONAL_HAZARDS
    confirmed = {f.rule for f in saved[model, fmt] if f.verification.status == "confirmed"}
    assert expected <= confirmed, expected - confirmed


def test_the_tf1_saved_model_keeps_its_optimizer_and_its_float16_epsilon_is_flagged(saved):
    [adam] = [f for f in saved["tf1", "saved_model"] if f.rule == "TNL403"]
    assert adam.verification.status == "confirmed"
    assert "1e-08" in adam.message and "float16" in adam.message
    # a frozen graph keeps no optimizer: nothing to say about it
    assert not [f for f in saved["tf1", "pb"] if f.rule == "TNL403"]


@pytest.mark.parametrize("fmt", ["saved_model", "keras", "pb"])
def test_every_twin_is_clean(saved, fmt):
    assert shown(saved["twins", fmt]) == []


def test_the_functional_model_shows_nothing_but_its_hazards(saved):
    """One shown finding per hazard: the twins beside them in the same graph stay hidden."""
    rules = sorted(f.rule for f in shown(saved["functional", "keras"]))
    assert rules == sorted(gm.FUNCTIONAL_HAZARDS)


def test_a_finding_names_the_op_and_its_name_scope(saved):
    [log] = [f for f in saved["functional", "keras"] if f.rule == "TNL101"]
    assert "/Log" in log.source_line
    assert f"`{log.source_line}`" in log.message
    assert "name scope `" in log.message and "Softmax" in log.message
    assert log.line >= 1 and log.column == 1 and log.end_column == len(log.source_line) + 1


def test_the_witness_makes_the_model_itself_non_finite(saved, tmp_path):
    """The confirmed input, fed to the Keras model, gives the -inf the finding reports."""
    model = gm.functional()
    path = tmp_path / "witness.keras"
    model.save(path)
    [log] = [f for f in findings_of(path) if f.rule == "TNL101"]
    x = np.asarray(log.verification.inputs["x"], np.float32).reshape(1, gm.FEATURES)
    log_p = keras.ops.convert_to_numpy(model(x)[0])
    assert np.isneginf(log_p).any()
    assert log.verification.observed["value"] == -math.inf


# ---------------------------------------------------------------- weights decide the verdict


def _weights_file(tmp_path, scale: float):
    """A weight file for the functional model with its logit weights at ``scale``."""
    model = gm.functional(scale)
    path = tmp_path / f"w{scale}.weights.h5"
    model.save_weights(path)
    return path


@pytest.mark.parametrize(("scale", "status"), [(10.0, "confirmed"), (0.1, "refuted")])
def test_a_weight_file_decides_log_of_softmax(tmp_path, scale, status):
    model = gm.functional(1.0)
    model.load_weights(_weights_file(tmp_path, scale))
    path = tmp_path / f"m{scale}.keras"
    model.save(path)
    [log] = [f for f in findings_of(path) if f.rule == "TNL101"]
    assert log.verification.status == status, log.verification.detail
    if status == "refuted":
        detail = log.verification.detail
        assert "refuted by range" in detail and "x in [-10, 10]" in detail
        lo = float(detail.split("stays in [")[1].split(",")[0])
        assert lo > 0  # the softmax output's lower bound with these weights
    else:
        assert log.verification.inputs["x"]


# ---------------------------------------------------------------- input ranges


def _exp_model(path, preprocess=None, dtype="float32"):
    x = keras.Input((gm.FEATURES,), name="x", dtype=dtype)
    h = keras.ops.cast(x, "float32") if dtype != "float32" else x
    if preprocess is not None:
        h = preprocess(h)
    dense = keras.layers.Dense(1, kernel_initializer="ones", name="z")
    keras.Model(x, keras.ops.exp(dense(h))).save(path)
    return path


def test_the_default_box_refutes_and_a_wider_input_range_confirms(tmp_path):
    path = _exp_model(tmp_path / "exp.keras")  # z = sum(x): |z| <= 40 in the default box
    [default] = [f for f in findings_of(path) if f.rule == "TNL301"]
    assert default.verification.status == "refuted"
    assert "[-40, 40]" in default.verification.detail
    [wide] = [f for f in findings_of(path, {"x": [0, 100]}) if f.rule == "TNL301"]
    assert wide.verification.status == "confirmed"
    assert "x in [0, 100] (--input-range)" in wide.verification.detail
    assert max(wide.verification.inputs["x"]) > 22  # sum(x) past 88.7 needs x beyond 22


def test_a_rescaling_layer_sets_the_input_box(tmp_path):
    rescale = keras.layers.Rescaling(1 / 255.0)
    path = _exp_model(tmp_path / "rescaled.keras", rescale)
    [f] = [f for f in findings_of(path) if f.rule == "TNL301"]
    assert "x in [0, 255] (a Rescaling by" in f.verification.detail
    assert f.verification.status == "refuted"  # z <= 4 * 255 / 255


def test_a_uint8_input_is_read_as_0_to_255(tmp_path):
    path = _exp_model(tmp_path / "uint8.keras", dtype="uint8")
    [f] = [f for f in findings_of(path) if f.rule == "TNL301"]
    assert "x in [0, 255] (its dtype uint8)" in f.verification.detail
    assert f.verification.status == "confirmed"  # sum of four bytes reaches 1020
