"""TNL301 exp-overflow and TNL302 where-nan-gradient."""

from __future__ import annotations

import pytest
from conftest import func, hits

# -- TNL301 exp-overflow ----------------------------------------------------------------


def test_tnl301_exp_of_matmul_position_and_message():
    src = """\
        import tensorflow as tf


        def energy(x, w):
            return tf.exp(tf.matmul(x, w))
        """
    [f] = hits("TNL301", src)
    assert (f.line, f.column, f.end_line, f.end_column) == (5, 12, 5, 35)
    assert f.severity == "warning"
    assert "88.72" in f.message
    assert "float32" in f.message


@pytest.mark.parametrize(
    "body",
    [
        "return tf.exp(a - b)",
        "return tf.exp(-a)",
        "h = tf.keras.layers.Dense(10)(a)\nreturn tf.exp(h)",
        "return tf.math.exp(tf.linalg.matmul(a, b))",
    ],
)
def test_tnl301_fires_on_unbounded_values(body):
    assert len(hits("TNL301", func(body, "a, b"))) == 1


def test_tnl301_a_where_of_two_exps_is_non_negative_so_exp_of_its_negation_is_bounded():
    """GEV-CDF shape: t = where(c == 0, exp(-z), exp(-log1p(z * c) / c)) is >= 0, exp(-t) <= 1."""
    body = (
        "t = tf.where(tf.equal(c, 0.), tf.exp(-a), tf.exp(-tf.math.log1p(a * c) / c))\n"
        "return tf.exp(-t)"
    )
    flagged = hits("TNL301", func(body, "a, c"))
    assert [f.line for f in flagged] == [5]  # exp(-a) inside the where, not exp(-t)
    unbounded = hits("TNL301", func("t = tf.where(a > 0, a, b)\nreturn tf.exp(-t)", "a, b"))
    assert len(unbounded) == 1


def test_a_where_guard_does_not_pass_its_branchs_zero_on():
    guarded = "return a / tf.where(b > 0, b, tf.ones_like(b))"
    assert not hits("TNL201", func(guarded, "a, b"))


def test_tnl301_manual_softmax():
    src = """\
        import tensorflow as tf


        def softmax(logits):
            e = tf.exp(logits)
            return e / tf.reduce_sum(e, axis=-1, keepdims=True)
        """
    [f] = hits("TNL301", src)
    assert f.line == 6
    assert "softmax written with exp" in f.message
    assert "tf.nn.softmax" in f.message


def test_tnl301_manual_softmax_inline_reports_the_exp():
    body = "return tf.exp(x) / tf.reduce_sum(tf.exp(x), axis=-1, keepdims=True)"
    [f] = hits("TNL301", func(body))
    assert (f.column, f.end_column) == (12, 21)  # the first tf.exp(x)


def test_tnl301_float16_limit():
    body = "x = tf.cast(x, tf.float16)\nreturn tf.exp(x)"
    [f] = hits("TNL301", func(body))
    assert "11.09" in f.message
    assert "float16" in f.message


@pytest.mark.parametrize(
    "body",
    [
        "return tf.exp(x)",  # a bare unknown parameter
        "return tf.exp(tf.nn.log_softmax(x))",
        "return tf.exp(tf.clip_by_value(x, -20.0, 20.0))",
        "return tf.exp(x - tf.reduce_max(x, axis=-1, keepdims=True))",
        "z = tf.exp(x - tf.reduce_max(x, axis=-1, keepdims=True))\n"
        "return z / tf.reduce_sum(z, axis=-1, keepdims=True)",
        "return tf.nn.softmax(x)",
        "return tf.exp(tf.math.log_sigmoid(x))",
    ],
)
def test_tnl301_silent(body):
    assert hits("TNL301", func(body)) == []


def test_tnl301_tensor_of_unknown_range_is_silent_in_float32():
    assert hits("TNL301", func("return tf.exp(tf.identity(x))")) == []


# -- TNL302 where-nan-gradient ----------------------------------------------------------


def test_tnl302_log_in_where_branch():
    src = """\
        import tensorflow as tf


        def log_counts(counts):
            return tf.where(counts > 0, tf.math.log(counts), tf.zeros_like(counts))
        """
    [f] = hits("TNL302", src)
    assert (f.line, f.column) == (5, 12)
    assert f.severity == "error"
    assert "log" in f.message
    assert "double-where" in f.message


@pytest.mark.parametrize(
    "body",
    [
        "return tf.where(n > 0, x / n, tf.zeros_like(x))",
        "return tf.where(x > 0, tf.math.log(x), 0.0)",
        "return tf.where(tf.abs(x) < 1, tf.math.atanh(x), 0.0)",
        "return tf.where(x > 0, tf.pow(x, 0.5), tf.zeros_like(x))",
    ],
)
def test_tnl302_fires(body):
    assert len(hits("TNL302", func(body, "x, n"))) == 1


def test_tnl302_keras_backend_switch():
    src = """\
        from tensorflow.keras import backend as K


        def f(x):
            return K.switch(x > 0, K.log(x), K.zeros_like(x))
        """
    assert len(hits("TNL302", src)) == 1


def test_tnl302_keras_ops_where():
    src = """\
        from keras import ops


        def f(x):
            return ops.where(x > 0, ops.log(x), 0.0)
        """
    assert len(hits("TNL302", src)) == 1


@pytest.mark.parametrize(
    "body",
    [
        # the double-where form, inline and through a name
        "return tf.where(x > 0, tf.math.log(tf.where(x > 0, x, 1.0)), 0.0)",
        "safe = tf.where(x > 0, x, tf.ones_like(x))\nreturn tf.where(x > 0, tf.math.log(safe), tf.zeros_like(x))",
        # guarded inputs
        "return tf.where(x > 0, tf.math.log(tf.maximum(x, 1e-7)), 0.0)",
        "return tf.where(x > 0, tf.math.log(tf.clip_by_value(x, 1e-7, 1.0)), 0.0)",
        "return tf.where(n > 0, x / tf.maximum(n, 1.0), tf.zeros_like(x))",
        # safe branches
        "return tf.where(x > 0, x, 0.0)",
        "return tf.where(x > 0, tf.exp(-tf.abs(x)), 0.0)",
    ],
)
def test_tnl302_silent(body):
    assert hits("TNL302", func(body, "x, n")) == []


def test_tnl301_silent_on_exp_of_a_log_likelihood():
    src = """\
        import tensorflow as tf


        def ratio(p, q, x):
            log_p = tf.math.log(p) - tf.math.log1p(-x)
            log_q = tf.math.xlogy(x, q)
            return tf.exp(log_p - log_q)
        """
    assert hits("TNL301", src) == []


def test_tnl301_still_fires_on_a_plain_difference():
    src = """\
        import tensorflow as tf


        def weights(a, b):
            return tf.exp(a - b)
        """
    assert [f.rule for f in hits("TNL301", src)] == ["TNL301"]
