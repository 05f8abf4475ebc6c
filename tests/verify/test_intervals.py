"""Interval analysis over traced graphs: the DEBAR producers, with float semantics."""

from __future__ import annotations

import math

import pytest

tf = pytest.importorskip("tensorflow")

from tfnumlint.verify import intervals as iv  # noqa: E402

INF = math.inf


def ranges(fn, lo=-INF, hi=INF, dtype="float32", n_inputs=1):
    """Interval of fn's single output, with every placeholder in [lo, hi]."""
    specs = [tf.TensorSpec([None, 4], dtype, name=f"in_{i}") for i in range(n_inputs)]
    cf = tf.function(fn).get_concrete_function(*specs)
    graph = cf.graph
    out = iv.analyse(graph, {f"in_{i}": (lo, hi) for i in range(n_inputs)}, dtype)
    return (
        out[cf.outputs[0].op.inputs[0].name]
        if cf.outputs[0].op.type == "Identity"
        else out[cf.outputs[0].name]
    )


@pytest.mark.parametrize(
    "fn, expected",
    [
        (tf.sigmoid, (0.0, 1.0)),
        (tf.nn.softmax, (0.0, 1.0)),
        (tf.exp, (0.0, INF)),
        (tf.nn.relu, (0.0, INF)),
        (tf.nn.elu, (-1.0, INF)),
        (tf.nn.selu, (-1.0507009873554805 * 1.6732632423543772, INF)),
        (lambda x: tf.nn.elu(tf.clip_by_value(x, -1.0, 2.0)), (math.exp(-1.0) - 1.0, 2.0)),
        (tf.square, (0.0, INF)),
        (tf.abs, (0.0, INF)),
        (tf.tanh, (-1.0, 1.0)),
        (lambda x: tf.clip_by_value(x, 1e-7, 1 - 1e-7), (1e-7, 1 - 1e-7)),
        (lambda x: tf.maximum(x, 1e-6), (1e-6, INF)),
        (lambda x: tf.minimum(x, 2.0), (-INF, 2.0)),
        (lambda x: tf.reduce_sum(tf.square(x), axis=-1), (0.0, INF)),
        (lambda x: tf.reduce_mean(tf.sigmoid(x), axis=-1), (0.0, 1.0)),
        (lambda x: tf.reduce_sum(tf.square(x), axis=-1) + 1e-12, (1e-12, INF)),
        (lambda x: 1.0 - tf.sigmoid(x), (0.0, 1.0)),
        (lambda x: tf.sigmoid(x) * 2.0, (0.0, 2.0)),
        (lambda x: tf.sigmoid(x) / 4.0, (0.0, 0.25)),
    ],
)
def test_producers_on_unknown_input(fn, expected):
    lo, hi = ranges(fn)
    assert lo == pytest.approx(expected[0], rel=1e-6, abs=1e-12)
    assert hi == pytest.approx(expected[1], rel=1e-6)


def test_placeholder_range_and_arithmetic():
    assert ranges(lambda x: x * 2.0 + 1.0, 0.0, 1.0) == (1.0, 3.0)
    assert ranges(lambda x: x - 3.0, 0.0, 1.0) == (-3.0, -2.0)
    assert ranges(lambda x: 1.0 / (x + 1.0), 0.0, 1.0) == pytest.approx((0.5, 1.0))
    assert ranges(lambda x: 1.0 / x, -1.0, 1.0) == (-INF, INF)


def test_matmul_of_nonnegative_factors_is_nonnegative():
    lo, hi = ranges(
        lambda a, b: tf.matmul(tf.nn.relu(a), tf.sigmoid(b), transpose_b=True), n_inputs=2
    )
    assert lo == 0.0 and hi == INF


def test_float32_sigmoid_of_bounded_logits_flushes_to_zero():
    lo, hi = ranges(tf.sigmoid, -200.0, -100.0)
    assert lo == 0.0  # e^-100 is below float32's smallest normal: treated as reaching 0
    assert hi < 1e-40 or hi == pytest.approx(3.7e-44, rel=0.1)


def test_exp_of_clipped_input_never_overflows():
    x = ranges(lambda x: tf.clip_by_value(x, -50.0, 50.0))
    assert x == (-50.0, 50.0)
    assert iv.overflow_point("float32") == pytest.approx(88.72, abs=0.01)
    assert iv.overflow_point("float16") == pytest.approx(11.09, abs=0.01)


def test_rounding_is_outward_in_the_dtype():
    r = iv.Rounder("float16")
    lo, hi = r.interval(0.1, 0.1)
    assert lo <= 0.1 <= hi
    assert r.down(1e-8) == 0.0  # below float16's smallest normal
