"""Model files are data: a bad one gives a clear error, the run goes on, nothing of the
author's runs (a canary module that writes a file on import and on call proves it)."""

from __future__ import annotations

import json
import os
import sys

import pytest

pytest.importorskip("tensorflow")
import graph_models as gm
import keras
from conftest import run_cli

CANARY_MODULE = """
import os, pathlib
CANARY = pathlib.Path(os.environ["TFNUMLINT_CANARY"])
CANARY.write_text("imported")  # runs whenever this module is imported

import keras


@keras.saving.register_keras_serializable(package="canary")
class Canary(keras.layers.Layer):
    def call(self, x):
        CANARY.write_text("called")
        return x
"""
SOURCE = "import tensorflow as tf\n\n\ndef f(x):\n    return tf.math.log(tf.nn.softmax(x))\n"


def _custom_op_saved_model(path):
    """A SavedModel whose graph holds an op type TensorFlow does not know."""
    from tensorflow.core.protobuf import saved_model_pb2

    gm.twins_only().export(str(path), verbose=False)
    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString((path / "saved_model.pb").read_bytes())
    patched = 0
    for fn in proto.meta_graphs[0].graph_def.library.function:
        for node in fn.node_def:
            if node.op == "Softmax":
                node.op = "TfnumlintCanaryOp"
                patched += 1
    assert patched
    (path / "saved_model.pb").write_bytes(proto.SerializeToString())


def _canary_keras(tree, mods, canary):
    mods.mkdir()
    (mods / "canary_layers.py").write_text(CANARY_MODULE)
    sys.path.insert(0, str(mods))
    os.environ["TFNUMLINT_CANARY"] = str(canary)
    try:
        import canary_layers

        x = keras.Input((gm.FEATURES,), name="x")
        keras.Model(x, canary_layers.Canary()(x)).save(tree / "custom_layer.keras")
    finally:
        sys.path.remove(str(mods))
        del os.environ["TFNUMLINT_CANARY"]
    canary.unlink()


@pytest.fixture(scope="module")
def bad_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad")
    tree = root / "tree"
    tree.mkdir()
    _custom_op_saved_model(tree / "custom_op_sm")
    frozen = gm.save_frozen(gm.twins_only(), root / "whole.pb").read_bytes()
    (tree / "truncated.pb").write_bytes(frozen[: len(frozen) // 2 + 1])
    _canary_keras(tree, root / "mods", root / "canary.txt")
    x = keras.Input((gm.FEATURES,), name="x")
    keras.Model(x, keras.layers.Lambda(lambda t: t * 2)(x)).save(tree / "lambda.keras")
    fake = tree / "looks_like_sm"
    (fake / "variables").mkdir(parents=True)
    (fake / "saved_model.pb").write_bytes(b"\xff\xfe this is not a SavedModel \x00\x01")
    (tree / "train.py").write_text(SOURCE)
    env = {
        "PYTHONPATH": os.pathsep.join([str(root / "mods"), os.environ.get("PYTHONPATH", "")]),
        "TFNUMLINT_CANARY": str(root / "canary.txt"),
    }
    proc = run_cli("--format", "json", "--no-cache", str(tree), cwd=root, env=env)
    return root, proc


def _errors(proc) -> dict[str, str]:
    report = json.loads(proc.stdout)
    return {os.path.basename(e["path"]): e["message"] for e in report["errors"]}


def test_each_bad_model_gives_a_clear_error(bad_tree):
    _, proc = bad_tree
    errors = _errors(proc)
    assert "'TfnumlintCanaryOp' is not a TensorFlow op (a custom op)" in errors["custom_op_sm"]
    assert errors["truncated.pb"].startswith(("not a GraphDef", "not loaded"))
    assert errors["custom_layer.keras"].startswith("not loaded: custom object ")
    assert "Canary" in errors["custom_layer.keras"]
    assert "custom object Lambda" in errors["lambda.keras"]
    assert errors["looks_like_sm"].startswith("not a SavedModel")
    assert "Traceback" not in proc.stderr


def test_the_run_goes_on_past_them(bad_tree):
    _, proc = bad_tree
    assert proc.returncode == 2  # files could not be analysed
    report = json.loads(proc.stdout)
    assert [f["rule"] for f in report["findings"]] == ["TNL101"]
    assert report["findings"][0]["path"].endswith("train.py")


def test_nothing_of_the_author_ran(bad_tree):
    root, _ = bad_tree
    assert not (root / "canary.txt").exists()
