"""The training rung's static reading of where weights start
(``analysis/slicing/program_sources.py``): a helper that makes a variable is read through, with
its parameters bound to the call's arguments, and only when every name it reads means the same
at the call."""

from __future__ import annotations

import textwrap

import libcst as cst

from tfnumlint.analysis.context import Context
from tfnumlint.analysis.module import build
from tfnumlint.analysis.slicing.program_sources import initializer, inlined, model_layers
from tfnumlint.config import Settings

HELPERS = """\
    import tensorflow as tf

    STD = 0.1

    def weight_variable(shape, scale=1.0):
        initial = tf.random.truncated_normal(shape, stddev=STD * scale)
        return tf.Variable(initial)

    W1 = weight_variable([64, 128])
    W2 = weight_variable([128, 10], scale=2.0)

    def build():
        STD = 5.0
        W3 = weight_variable([10, 10])
        return W3
"""


def _site(ctx: Context, code: str):
    return next(s for s in ctx.info.calls if ctx.code(s.node) == code)


def _read(code: str) -> dict | None:
    ctx = Context(build(cst.parse_module(textwrap.dedent(HELPERS))), Settings())
    site = _site(ctx, code)
    made = inlined(ctx, site.node, site.scope, site.order)
    if not isinstance(made, cst.Call):
        return None
    return initializer(ctx, made, site.scope, site.order)


def test_a_helper_variable_starts_as_the_helper_makes_it_with_the_calls_arguments() -> None:
    assert _read("weight_variable([64, 128])") == {
        "init": "truncated_normal", "shape": [64, 128], "stddev": 0.1}  # fmt: skip
    assert _read("weight_variable([128, 10], scale=2.0)") == {
        "init": "truncated_normal", "shape": [128, 10], "stddev": 0.2}  # fmt: skip


def test_a_helper_is_not_read_where_a_local_shadows_a_name_it_reads() -> None:
    assert _read("weight_variable([10, 10])") is None  # STD is 5.0 in build(), not 0.1


ADDED = """\
    import tensorflow as tf
    from tensorflow.keras.layers import Dense, Dropout

    m = tf.keras.Sequential(name="net")
    m.add(Dense(64, activation="relu", input_dim=30))
    m.add(Dropout(0.5))
    m.add(Dense(5, activation="softmax"))
    m.compile(loss="mse", optimizer="sgd")

    k = tf.keras.Sequential()
    k.add(Dense(8, input_dim=3))
    if WIDE:
        k.add(Dense(8))
    k.add(Dense(1))
    k.compile(loss="mse", optimizer="sgd")
"""


def _layers(receiver: str) -> list[dict] | None:
    ctx = Context(build(cst.parse_module(textwrap.dedent(ADDED))), Settings())
    site = _site(ctx, f'{receiver}.compile(loss="mse", optimizer="sgd")')
    return model_layers(ctx, site.node.func.value, site.scope, site.order)


def test_a_sequential_built_by_add_statements_has_their_layers_in_order() -> None:
    layers = _layers("m")
    assert layers is not None
    assert [layer.get("units") for layer in layers] == [64, None, 5]
    assert [layer.get("activation") for layer in layers if "units" in layer] == ["relu", "softmax"]
    assert layers[0]["input_dim"] == 30


def test_an_add_under_a_condition_leaves_the_stack_unknown() -> None:
    assert _layers("k") is None  # two or three layers: the run decides
