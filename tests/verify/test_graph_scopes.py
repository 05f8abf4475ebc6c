"""Layers of graphs that record no layer tree (a ``Model.export`` SavedModel, a frozen ``.pb``,
a TF1 graph): the name scope where an op's weights are read, reported like a layer path."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tensorflow")
import graph_models as gm
import keras
import tensorflow as tf

from tfnumlint.discovery import Candidate
from tfnumlint.models import ModelOptions, to_result
from tfnumlint.ruledocs import all_docs
from tfnumlint.verify.graphs.layers import _keras_path
from tfnumlint.verify.graphs.lint import lint_model

BIG = keras.initializers.Constant(30.0)  # 4 inputs of up to 10: exp(1200)


def _exp_finding(path):
    answer = lint_model({"path": str(path), "input_ranges": {}})
    assert "error" not in answer, answer
    found = to_result(Candidate(path, path.name), answer, ModelOptions(all_docs())).findings
    [exp] = [f for f in found if f.rule == "TNL301"]
    assert exp.verification.status == "confirmed"
    return exp


@pytest.fixture(scope="module")
def keras_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("scopes")
    x = keras.Input((gm.FEATURES,), name="x")
    y = keras.layers.Dense(3, activation="exponential", name="energy", kernel_initializer=BIG)(x)
    model = keras.Model(x, y, name="m")
    model.export(str(root / "exported"), verbose=False)
    return {"exported": root / "exported", "pb": gm.save_frozen(model, root / "m.pb")}


def test_a_model_export_saved_model_names_the_keras_layer(keras_files):
    exp = _exp_finding(keras_files["exported"])
    # the op's scope m_1/energy_1 reads the weights the object graph names energy/kernel
    assert exp.graph["layer"] == "energy" and exp.graph["layer_kind"] == "scope"
    assert "layer `energy`, by its weights' name scope" in exp.message


def test_a_frozen_keras_graph_names_the_scope_of_the_weights(keras_files):
    exp = _exp_finding(keras_files["pb"])
    assert exp.graph["layer"] == "m_1/energy_1" and exp.graph["layer_kind"] == "scope"
    assert "layer `m_1/energy_1`, by its weights' name scope" in exp.message


def test_tf1_graphs_name_their_variable_scope(tmp_path):
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, gm.FEATURES], name="x")
        with v1.variable_scope("energy"):
            w = v1.get_variable("kernel", initializer=np.full((gm.FEATURES, 3), 30.0, np.float32))
            e = tf.exp(tf.matmul(x, w))
        stable = tf.nn.log_softmax(x, name="stable")  # outside any layer
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            builder = v1.saved_model.Builder(str(tmp_path / "tf1_sm"))
            sig = v1.saved_model.predict_signature_def({"x": x}, {"e": e, "s": stable})
            builder.add_meta_graph_and_variables(sess, ["serve"], {"serving_default": sig})
            builder.save()
            frozen = v1.graph_util.convert_variables_to_constants(
                sess, graph.as_graph_def(), [e.op.name, stable.op.name]
            )
    (tmp_path / "tf1.pb").write_bytes(frozen.SerializeToString())
    for path in (tmp_path / "tf1_sm", tmp_path / "tf1.pb"):
        exp = _exp_finding(path)
        assert exp.source_line == "energy/Exp"
        assert exp.graph["layer"] == "energy", path.name


def test_a_scope_is_a_variable_layer_when_its_tail_matches_the_layer_path():
    paths = {"energy", "inner/dense_1"}
    assert _keras_path(["m_1", "energy_1"], paths) == "energy"
    assert _keras_path(["outer_1", "inner_1", "dense_1_1"], paths) == "inner/dense_1"
    assert _keras_path(["m_1", "energy_head"], paths) is None
    assert _keras_path(["m_1"], paths) is None
