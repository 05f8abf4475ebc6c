"""Facts that survive common operations, and float underflow as a zero source (one file)."""

from __future__ import annotations

import math
import struct

import pytest
from conftest import func, hits

from tfnumlint.floats import exp_overflow, exp_underflow, smallest_normal, smallest_subnormal


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def test_exp_thresholds_come_from_the_dtype():
    # float32: exp(x) is 0 below log(2**-126) with flush-to-zero, below log(2**-150) without
    assert exp_underflow("float32") == pytest.approx(-126 * math.log(2))
    assert exp_underflow("float32", flush_to_zero=False) == pytest.approx(-150 * math.log(2))
    assert round(exp_underflow("float32"), 2) == -87.34
    assert round(exp_underflow("float32", flush_to_zero=False), 2) == -103.97
    assert round(exp_overflow("float32"), 2) == 88.72
    assert round(exp_overflow("float16"), 2) == 11.09
    assert smallest_subnormal("float16") == 2.0**-24
    assert smallest_normal("bfloat16") == 2.0**-126
    # just past the threshold the float32 result really is 0 (without flushing: rounding)
    below = exp_underflow("float32", flush_to_zero=False) - 1e-3
    assert _f32(math.exp(below)) == 0.0
    assert _f32(math.exp(below + 2e-3)) > 0.0


def test_loose_clip_under_exp_is_a_zero_for_sqrt():
    """The VAE reparameterisation with a loose clip: exp(-100) is 0, sqrt' is inf there."""
    [f] = hits("TNL202", func("return tf.sqrt(tf.exp(tf.clip_by_value(s, -100.0, 87.0)))", "s"))
    assert "-87.34" in f.message and "float32" in f.message


def test_tight_clip_under_exp_is_no_zero():
    assert (
        hits("TNL202", func("return tf.sqrt(tf.exp(tf.clip_by_value(s, -20.0, 20.0)))", "s")) == []
    )


def test_float16_underflow_threshold_is_its_own():
    body = "s = tf.cast(s, tf.float16)\nreturn tf.sqrt(tf.exp(tf.clip_by_value(s, -12.0, 8.0)))"
    [f] = hits("TNL202", func(body, "s"))
    assert "-9.70" in f.message and "float16" in f.message


def test_exp_of_an_arbitrary_value_is_no_zero_for_a_plain_division():
    assert hits("TNL201", func("return x / tf.exp(s)", "x, s")) == []


@pytest.mark.parametrize("div", ["e / d", "tf.divide(e, d)", "tf.math.divide(e, d)"])
def test_manual_softmax_denominator_underflow(div):
    body = f"e = tf.exp(tf.clip_by_value(x, -100.0, 80.0))\nd = tf.reduce_sum(e, axis=-1, keepdims=True)\nreturn {div}"
    [f] = hits("TNL201", func(body))
    assert "underflow" in f.message
    assert hits("TNL301", func(body)) == []  # clipped below 88.7: no overflow


def test_manual_softmax_each_unclipped_exp_is_reported():
    body = (
        "e = tf.exp(tf.clip_by_value(x, -30.0, 30.0))\n"
        "return e / tf.reduce_sum(tf.exp(x), axis=-1, keepdims=True)"
    )
    [f] = hits("TNL301", func(body))
    assert "denominator" in f.message
    assert f.line == 6 and f.column == 30  # the denominator's exp, not the clipped one


def test_max_shifted_softmax_is_silent_for_both_rules():
    body = (
        "e = tf.exp(x - tf.reduce_max(x, axis=-1, keepdims=True))\n"
        "return e / tf.reduce_sum(e, axis=-1, keepdims=True)"
    )
    assert hits("TNL201", func(body)) == []
    assert hits("TNL301", func(body)) == []


def test_sum_of_absolute_weights_is_a_strong_zero():
    [f] = hits("TNL201", func("return x / tf.reduce_sum(tf.abs(w), axis=0)", "x, w"))
    assert "all-zero" in f.message
    # a plain abs is only a weak zero (an arbitrary input that is exactly 0)
    assert hits("TNL201", func("return x / tf.abs(w)", "x, w")) == []


@pytest.mark.parametrize(
    "wrap",
    [
        "tf.abs(p)",
        "tf.reshape(p, [-1])",
        "tf.transpose(p)",
        "tf.expand_dims(p, 0)",
        "tf.squeeze(p)",
        "tf.tile(p, [2, 1])",
        "tf.gather(p, idx)",
        "tf.identity(p)",
        "tf.concat([p, p], axis=0)",
    ],
)
def test_probability_survives_shape_ops_and_abs(wrap):
    body = f"p = tf.nn.softmax(z)\nreturn tf.math.log({wrap})"
    assert len(hits("TNL101", func(body, "z, idx"))) == 1


def test_matmul_plus_bias_is_a_linear_output():
    body = "z = tf.matmul(x, w) + b\nreturn tf.exp(z)"
    [f] = hits("TNL301", func(body, "x, w, b"))
    assert "matmul" in f.message
    scaled = "z = (tf.matmul(x, w) + b) * 0.5\nreturn tf.exp(z)"
    assert len(hits("TNL301", func(scaled, "x, w, b"))) == 1


def test_log_loss_on_a_linear_output_is_a_mismatch():
    body = "z = tf.matmul(x, w) + b\nreturn -tf.reduce_mean(y * tf.math.log(z))"
    [f] = hits("TNL503", func(body, "x, w, b, y"))
    assert "linear" in f.message and "matmul" in f.message
    # one hazard, one finding: not also "log of an unbounded value"
    assert hits("TNL104", func(body, "x, w, b, y")) == []


def test_log_of_a_linear_output_outside_a_loss_stays_tnl104():
    body = "z = tf.matmul(x, w) + b\nreturn tf.math.log(z)"
    assert hits("TNL503", func(body, "x, w, b")) == []
    assert len(hits("TNL104", func(body, "x, w, b"))) == 1


def test_a_val_copy_is_dataclasses_replace_without_its_cost():
    """``values.revalue`` (the evaluator's copy of a value with changes) gives what
    ``dataclasses.replace`` gives, field for field, and refuses a field Val does not have."""
    import dataclasses

    from tfnumlint.analysis.values import Val, revalue

    base = Val("sigmoid", 0.0, 1.0, tensor=True, prob=True, desc="`p`", zero="it saturates")
    for changes in ({}, {"desc": "`q`"}, {"lo": -1.0, "hi": 2.0, "const": None, "prob": False}):
        ours, theirs = revalue(base, **changes), dataclasses.replace(base, **changes)
        assert ours == theirs and ours is not base and hash(ours) == hash(theirs)
        assert type(ours) is Val and vars(ours) == vars(theirs)
    assert base.desc == "`p`"  # the original is untouched
    with pytest.raises(TypeError):
        revalue(base, colour="red")
