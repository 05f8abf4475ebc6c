"""TNL404 in a project Keras layer: the mixed-precision policy makes its ``call`` compute in
float16 unless every instance is built in float32 (``analysis/layer_policy.py``), and the first
input of its ``call`` ranges over the data ``fit`` feeds the model it starts
(``analysis/layer_inputs.py``).  Each negative case is checked next to the program it differs
from, which is flagged."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from conftest import hits

from tfnumlint.analysis.context import Context
from tfnumlint.analysis.module import build
from tfnumlint.config import Settings

# {policy}: the policy statement; {dtype}: the instance's keyword arguments; {cast}: a line at
# the start of call; {data}: the array fit trains on
PROGRAM = """\
import numpy as np
import tensorflow as tf
from tensorflow import keras

{policy}
rng = np.random.default_rng(0)
readings = np.clip(500 + rng.normal(0, 40, (64, 16)), 0, {top}).astype("float32")
labels = rng.integers(0, 2, 64).astype("float32")


class Centre(keras.layers.Layer):
    def call(self, v):
        {cast}
        m = tf.reduce_mean(v, axis=1, keepdims=True)
        return tf.reduce_mean(v * v, axis=1, keepdims=True) - m * m


model = keras.Sequential([keras.Input((16,)), {layers}, keras.layers.Dense(1)])
model.compile("adam", "mse")
model.fit({data}, labels, epochs=1)
"""
MIXED = 'keras.mixed_precision.set_global_policy("mixed_float16")'


def program(
    policy: str = MIXED,
    layers: str = "Centre()",
    cast: str = "pass",
    top: int = 1023,
    data: str = "readings",
) -> str:
    return PROGRAM.format(policy=policy, layers=layers, cast=cast, top=top, data=data)


def square_hits(src: str) -> list:
    """TNL404's findings on the line of ``v * v`` and ``m * m``."""
    return [f for f in hits("TNL404", src) if "v * v" in f.source_line]


def test_the_policy_makes_a_layer_square_raw_counts_in_float16():
    found = square_hits(program())
    assert _squared(found) == ["v * v", "m * m"]
    message = found[0].message
    assert "mixed_float16 policy set on line 5" in message
    assert "`Centre`'s call compute in float16" in message
    assert "`v` (`readings` fed to the model `Centre` starts) lies in [260, 740]" in message


@pytest.mark.parametrize(
    "policy",
    [
        'tf.keras.mixed_precision.set_global_policy("mixed_float16")',
        'keras.mixed_precision.set_global_policy(keras.mixed_precision.Policy("mixed_float16"))',
        'policy = keras.mixed_precision.Policy("mixed_float16")\n'
        "keras.mixed_precision.set_global_policy(policy)",
        'tf.keras.mixed_precision.experimental.set_policy("mixed_float16")',
        'keras.config.set_dtype_policy("mixed_float16")',
        'tf.compat.v1.keras.mixed_precision.set_global_policy("mixed_float16")',
        "tf.compat.v1.keras.mixed_precision.experimental.set_policy(\n"
        '    tf.compat.v1.keras.mixed_precision.experimental.Policy("mixed_float16"))',
        'def setup():\n    keras.mixed_precision.set_global_policy("mixed_float16")\n\n\nsetup()',
    ],
)
def test_every_spelling_of_the_policy_sets_the_layer_dtype(policy):
    found = square_hits(program(policy=policy))
    assert len(found) == 2
    assert all("the mixed_float16 policy set on line" in f.message for f in found)


@pytest.mark.parametrize(
    "dtype",
    ['dtype="float32"', "dtype=tf.float32", 'dtype=keras.mixed_precision.Policy("float32")'],
)
def test_a_layer_built_in_float32_computes_in_float32(dtype):
    assert square_hits(program())
    assert square_hits(program(layers=f"Centre({dtype})")) == []


def test_one_float16_instance_among_float32_ones_keeps_the_finding():
    second = "other = keras.Sequential([Centre({dtype})])\nother.fit(readings, labels)\n"
    float32 = program(layers="Centre(dtype='float32')")
    assert square_hits(float32 + second.format(dtype="dtype='float32'")) == []
    assert len(square_hits(float32 + second.format(dtype=""))) == 2


def test_an_instance_built_with_the_mixed_policy_needs_no_global_policy():
    second = "other = keras.Sequential([Centre(dtype='mixed_float16')])\n"
    found = square_hits(program(policy="") + second + "other.fit(readings, labels)\n")
    assert len(found) == 2
    assert "`Centre(dtype=...)` makes `Centre`'s call compute in float16" in found[0].message


def test_mixed_bfloat16_keeps_float32_range():
    assert square_hits(program())
    bf16 = 'keras.mixed_precision.set_global_policy("mixed_bfloat16")'
    assert square_hits(program(policy=bf16)) == []


def test_a_cast_to_float32_inside_call_computes_in_float32():
    assert square_hits(program())
    assert square_hits(program(cast="v = tf.cast(v, tf.float32)")) == []


def test_data_below_the_square_root_of_the_float16_max_is_safe():
    assert square_hits(program(top=1023))
    assert square_hits(program(top=250)) == []


def _squared(found: list) -> list[str]:
    return [f.source_line[f.column - 1 : f.end_column - 1] for f in found]


def test_a_layer_that_does_not_start_the_model_gets_no_data_range():
    assert "v * v" in _squared(square_hits(program()))
    later = "keras.layers.Dense(16), Centre()"
    assert "v * v" not in _squared(square_hits(program(layers=later)))


def test_a_functional_model_feeds_the_layer_called_on_its_input():
    src = program().replace(
        "model = keras.Sequential([keras.Input((16,)), Centre(), keras.layers.Dense(1)])",
        "inp = keras.Input((16,))\nout = keras.layers.Dense(1)(Centre()(inp))\n"
        "model = keras.Model(inp, out)",
    )
    assert len(square_hits(src)) == 2


def test_without_the_policy_the_layer_is_float32():
    assert square_hits(program())
    assert square_hits(program(policy="")) == []


def _call_dtype(src: str) -> str:
    ctx = Context(build(cst.parse_module(textwrap.dedent(src))), Settings())
    [site] = [s for s in ctx.info.binops if ctx.code(s.node) == "v * v"]
    return ctx.dtype(site)


def test_the_dtype_context_of_a_float32_layer_under_the_policy():
    """Every rule reads the layer's dtype: float32 code under a mixed_float16 policy."""
    assert _call_dtype(program()) == "float16"
    assert _call_dtype(program(layers="Centre(dtype='float32')")) == "float32"
