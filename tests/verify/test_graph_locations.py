"""Where a saved model's finding is: the op, its Keras layer (a functional model's layer, a
subclassed model's attribute layer) and, with the SavedModel's debug info, the Python line
that created the op; in the text, JSON, SARIF and GitHub outputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tensorflow")
import keras
import tensorflow as tf
from conftest import run_cli
from keras import ops

from tfnumlint.verify.graphs.layers import Layers, from_config

FEATURES = 4
BIG = keras.initializers.Constant(30.0)  # 4 inputs of up to 10 (the default box): exp(1200)


def functional() -> keras.Model:
    """The exp inside the layer ``dense_1`` (a Dense with the exponential activation), which
    sits in the nested functional model ``inner``."""
    x = keras.Input((FEATURES,), name="x")
    y = keras.layers.Dense(3, activation="exponential", name="dense_1", kernel_initializer=BIG)(x)
    inner = keras.Model(x, y, name="inner")
    z = keras.Input((FEATURES,), name="z")
    return keras.Model(z, inner(z), name="outer")


class Block(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.proj = keras.layers.Dense(2, kernel_initializer=BIG)  # named "dense..."

    def call(self, x):
        return ops.exp(self.proj(x))  # EXP-LINE


class Subclassed(keras.Model):
    def __init__(self):
        super().__init__(name="sub")
        self.head = keras.layers.Dense(3)  # its layer name is not its attribute name
        self.block = Block(name="blk")

    def call(self, x):
        return [ops.sigmoid(self.head(x)), self.block(x)]


def subclassed() -> keras.Model:
    model = Subclassed()
    model(np.zeros((1, FEATURES), np.float32))
    return model


def _save(model: keras.Model, path: Path, debug: bool) -> Path:
    spec = tf.TensorSpec([None, FEATURES], tf.float32, name="x")
    serve = tf.function(lambda x: model(x, training=False)).get_concrete_function(spec)
    options = tf.saved_model.SaveOptions(save_debug_info=debug)
    tf.saved_model.save(model, str(path), signatures=serve, options=options)
    return path


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("locations")
    functional().save(root / "functional.keras")
    sub = subclassed()
    _save(sub, root / "sub_debug", debug=True)
    _save(sub, root / "sub_plain", debug=False)
    return root


def _run(root: Path, fmt: str, target: str):
    env = {"TFNUMLINT_CACHE_DIR": str(root / "cache")}
    proc = run_cli("--format", fmt, "--select", "TNL301", target, cwd=root, env=env)
    assert proc.returncode == 1, proc.stderr
    return proc


def _finding(root: Path, target: str) -> dict:
    [finding] = json.loads(_run(root, "json", target).stdout)["findings"]
    return finding


def test_functional_layer_in_json(root):
    f = _finding(root, "functional.keras")
    assert f["verification"]["status"] == "confirmed"
    graph = f["graph"]
    assert graph["op"].endswith("/Exp") and graph["op_type"] == "Exp"
    assert graph["layer"] == "inner/dense_1" and graph["model"] == "outer"
    assert "layer `inner/dense_1` of model `outer`" in f["message"]
    assert "origin" not in graph  # a .keras file keeps no creation stack


@pytest.mark.parametrize("fmt", ["text", "concise", "github"])
def test_functional_layer_in_the_other_outputs(root, fmt):
    out = _run(root, fmt, "functional.keras").stdout
    assert "layer `inner/dense_1` of model `outer`" in out


def test_functional_layer_in_sarif(root):
    [result] = json.loads(_run(root, "sarif", "functional.keras").stdout)["runs"][0]["results"]
    logical = result["locations"][0]["logicalLocations"]
    assert [loc["kind"] for loc in logical] == ["function", "module"]
    assert logical[0]["fullyQualifiedName"].endswith("/Exp")
    assert logical[1]["fullyQualifiedName"] == "inner/dense_1" and logical[1]["name"] == "dense_1"


def test_subclassed_attribute_layers(root):
    f = _finding(root, "sub_plain")
    graph = f["graph"]
    assert graph["op"].endswith("/Exp")
    # the exp runs in Block.call: the attribute `block`; its input is the attribute `block.proj`
    assert graph["layer"] == "block" and graph["layer_kind"] == "attribute"
    assert "layer attribute `block`" in f["message"]
    assert "layer `block.proj`" in f["message"]  # the producer, a Dense named "dense..."
    assert "origin" not in graph and not f.get("related")  # saved without debug info


def _exp_line() -> int:
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, start=1) if text.endswith("# EXP-LINE"))


def test_debug_info_gives_the_python_line(root):
    f = _finding(root, "sub_debug")
    origin = f["graph"]["origin"]
    assert Path(origin["path"]).resolve() == Path(__file__).resolve()
    assert origin["line"] == _exp_line() and origin["function"] == "call"
    assert f"created at `{origin['path']}:{_exp_line()}`" in f["message"]
    [related] = f["related"]
    assert related["line"] == _exp_line()


def test_debug_info_in_sarif_related_locations(root):
    [result] = json.loads(_run(root, "sarif", "sub_debug").stdout)["runs"][0]["results"]
    [related] = result["relatedLocations"]
    assert related["physicalLocation"]["region"]["startLine"] == _exp_line()
    assert related["physicalLocation"]["artifactLocation"]["uri"].endswith(Path(__file__).name)


# ---------------------------------------------------------------- the scope matching itself


def _config(layers: list[dict], name: str = "m") -> dict:
    return {"class_name": "Functional", "config": {"name": name, "layers": layers}}


def _layer(name: str, module: str = "keras.layers", inner: list[dict] | None = None) -> dict:
    config: dict = {"name": name}
    if inner is not None:
        config["layers"] = inner
    return {"class_name": "X", "module": module, "name": name, "config": config}


def test_scope_components_match_layer_names_and_their_retrace_suffix():
    layers = from_config(
        _config([_layer("dense"), _layer("dense_1"), _layer("log", "keras.src.ops.numpy")])
    )
    assert layers.layer_of("m_1/dense_1/Sigmoid") == "dense_1"  # the exact name first
    assert layers.layer_of("m/dense/Sigmoid") == "dense"
    assert layers.layer_of("m_1/dense_7/Sigmoid") == "dense"  # a re-entered scope
    assert layers.layer_of("m_1/Log") is None  # a keras.ops call opens no layer scope
    assert layers.layer_of("m_1/log/Log") is None
    assert layers.layer_of("m_1/moments/Mean") is None  # an unknown scope is not a layer


def test_nested_models_give_a_path():
    layers = from_config(_config([_layer("enc", inner=[_layer("conv")]), _layer("head")]))
    assert layers.layer_of("m_1/enc_1/conv_1/Conv2D") == "enc/conv"
    assert layers.layer_of("m_1/enc_1/Relu") == "enc"
    assert layers.layer_of("m_1/head/BiasAdd") == "head"


def test_no_record_no_layer():
    assert Layers().layer_of("model/dense_1/Sigmoid") is None
