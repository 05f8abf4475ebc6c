"""TNL201-TNL206: divisions, roots, norms, powers and inverse trig at the edge of their domain."""

from __future__ import annotations

import pytest
from conftest import func, hits

# -- TNL201 division-by-possible-zero ---------------------------------------------------


def test_tnl201_relu_sum_denominator_position_and_message():
    src = """\
        import tensorflow as tf


        def normalise(x):
            h = tf.nn.relu(x)
            return h / tf.reduce_sum(h, axis=-1, keepdims=True)
        """
    [f] = hits("TNL201", src)
    assert f.severity == "error"
    assert (f.line, f.column) == (6, 12)
    # the range covers the `/` operator
    slash = f.source_line.index("/") + 1
    assert f.column <= slash < f.end_column
    assert "relu" in f.message
    assert "NaN" in f.message


def test_tnl201_masked_mean():
    src = """\
        import tensorflow as tf


        def positive_mean(values):
            valid = tf.cast(values > 0, tf.float32)
            return tf.reduce_sum(values * valid) / tf.reduce_sum(valid)
        """
    [f] = hits("TNL201", src)
    assert "mask is all zeros" in f.message


def test_tnl201_masked_mean_with_mask_parameter():
    src = """\
        import tensorflow as tf


        def masked_mean(values, mask):
            mask = tf.cast(mask, values.dtype)
            return tf.reduce_sum(values * mask) / tf.reduce_sum(mask)
        """
    [f] = hits("TNL201", src)
    assert f.line == 6


@pytest.mark.parametrize(
    "body",
    [
        "n = tf.math.count_nonzero(x, dtype=tf.float32)\nreturn tf.reduce_sum(x) / n",
        "return x / tf.norm(x, axis=-1, keepdims=True)",
        "return (x - tf.reduce_mean(x)) / tf.math.reduce_std(x)",
        "return x / tf.sigmoid(x)",
        "return x / tf.sqrt(tf.math.reduce_variance(x))",
    ],
)
def test_tnl201_fires_by_provenance(body):
    assert len(hits("TNL201", func(body))) == 1


def test_tnl201_an_einsum_of_relu_outputs_is_0_where_a_row_is_dead():
    """Linear attention's normaliser: a sum of products of ReLU features is 0 for a query
    whose every feature is 0."""
    body = (
        "den = tf.einsum('bth,bh->bt', tf.nn.relu(q), tf.reduce_sum(tf.nn.relu(k), axis=1))\n"
        "return num / den[:, :, None]"
    )
    [f] = hits("TNL201", func(body, "num, q, k"))
    assert "relu" in f.message, f.message


@pytest.mark.parametrize(
    "operands",
    [
        "q, k",  # any sign: no zero known
        "tf.exp(q), tf.exp(k)",  # strictly positive
    ],
)
def test_tnl201_an_einsum_with_no_zero_reason_is_silent(operands):
    body = f"return num / tf.einsum('bh,bh->b', {operands})"
    assert hits("TNL201", func(body, "num, q, k")) == []


def test_tnl201_product_of_norms_cosine_similarity():
    src = """\
        import tensorflow as tf


        def cosine(u, v):
            u_len = tf.norm(u, axis=-1)
            v_len = tf.norm(v, axis=-1)
            return tf.reduce_sum(u * v, axis=-1) / (u_len * v_len)
        """
    [f] = hits("TNL201", src)
    assert f.line == 7
    assert "norm" in f.message


@pytest.mark.parametrize("call", ["tf.math.divide", "tf.divide", "tf.truediv", "tf.math.realdiv"])
def test_tnl201_division_functions(call):
    body = f"s = tf.reduce_sum(tf.nn.relu(x))\nreturn {call}(x, s)"
    [f] = hits("TNL201", func(body))
    assert (f.line, f.column) == (6, 12)


def test_tnl201_epsilon_that_underflows_in_float16():
    src = """\
        import tensorflow as tf


        def normalise(x):
            x = tf.cast(x, tf.float16)
            total = tf.reduce_sum(tf.nn.relu(x), axis=-1, keepdims=True)
            return x / (total + 1e-8)
        """
    [f] = hits("TNL201", src)
    assert "float16" in f.message
    assert "1e-08" in f.message


@pytest.mark.parametrize(
    "body",
    [
        "s = tf.reduce_sum(tf.nn.relu(x))\nreturn tf.math.divide_no_nan(x, s)",
        "s = tf.reduce_sum(tf.nn.relu(x))\ns = tf.maximum(s, 1e-7)\nreturn x / s",
        "s = tf.reduce_sum(tf.nn.relu(x))\nreturn x / (s + 1e-6)",  # 1e-6 is fine in float32
        "return x / d",  # an unknown parameter
        "return x / 255.0 + x / 2",  # constants
        "return x / tf.exp(x)",
    ],
)
def test_tnl201_silent(body):
    assert hits("TNL201", func(body, "x, d")) == []


# -- TNL202 sqrt-at-zero ----------------------------------------------------------------


def test_tnl202_euclidean_distance():
    src = """\
        import tensorflow as tf


        def distance(a, b):
            return tf.sqrt(tf.reduce_sum(tf.square(a - b), axis=-1))
        """
    [f] = hits("TNL202", src)
    assert (f.line, f.column, f.end_column) == (5, 12, 61)
    assert f.severity == "error"
    assert "inf" in f.message
    assert "operands are equal" in f.message


@pytest.mark.parametrize(
    "expr",
    [
        "tf.sqrt(tf.math.reduce_variance(x))",
        "tf.sqrt(tf.nn.relu(x))",
        "tf.math.sqrt(tf.nn.relu(x))",
    ],
)
def test_tnl202_fires(expr):
    assert len(hits("TNL202", func(f"return {expr}"))) == 1


def test_tnl202_through_assignment():
    body = "d = tf.reduce_sum(tf.square(x - y), axis=-1)\nreturn tf.sqrt(d)"
    [f] = hits("TNL202", func(body, "x, y"))
    assert f.line == 6


@pytest.mark.parametrize(
    "expr",
    [
        "tf.sqrt(d + 1e-12)",
        "tf.sqrt(tf.maximum(d, 1e-12))",
        "tf.sqrt(tf.clip_by_value(d, 1e-12, 1e12))",
        "tf.sqrt(x)",  # a bare parameter
    ],
)
def test_tnl202_silent(expr):
    body = f"d = tf.reduce_sum(tf.square(x - y), axis=-1)\nreturn {expr}"
    assert hits("TNL202", func(body, "x, y")) == []


# -- TNL203 norm-at-zero ----------------------------------------------------------------


def test_tnl203_triplet_distance():
    src = """\
        import tensorflow as tf


        def triplet(anchor, positive, negative):
            d_pos = tf.norm(anchor - positive, axis=-1)
            d_neg = tf.norm(anchor - negative, axis=-1)
            return tf.reduce_mean(tf.nn.relu(d_pos - d_neg + 0.2))
        """
    findings = hits("TNL203", src)
    assert [(f.line, f.column) for f in findings] == [(5, 13), (6, 13)]
    assert "NaN gradient" in findings[0].message


@pytest.mark.parametrize(
    "expr",
    [
        "tf.linalg.norm(a)",
        "tf.math.reduce_euclidean_norm(a - b, axis=-1)",
        "tf.norm(a - b, ord='euclidean', axis=-1)",
        "tf.norm(a, ord=2)",
    ],
)
def test_tnl203_fires(expr):
    assert len(hits("TNL203", func(f"return {expr}", "a, b"))) == 1


@pytest.mark.parametrize(
    "expr",
    [
        "tf.math.l2_normalize(a, axis=-1)",
        "tf.norm(a, ord=1)",
        "tf.norm(a, ord=np.inf)",
        "tf.norm(a - b + 1e-7, axis=-1)",
        "tf.sqrt(tf.maximum(tf.reduce_sum(tf.square(a - b), axis=-1), 1e-12))",
    ],
)
def test_tnl203_silent(expr):
    src = "import numpy as np\n" + func(f"return {expr}", "a, b")
    assert hits("TNL203", src) == []


# -- TNL204 fractional-power ------------------------------------------------------------


def test_tnl204_pow_half_of_squared_distance():
    body = "d = tf.reduce_sum(tf.square(x - y), axis=-1)\nreturn tf.pow(d, 0.5)"
    [f] = hits("TNL204", func(body, "x, y"))
    assert (f.line, f.column) == (6, 12)
    assert "0.5" in f.message
    assert "inf gradient" in f.message


def test_tnl204_power_operator_on_tensor():
    body = "h = tf.matmul(x, y)\nreturn h ** (1.0 / 3.0)"
    [f] = hits("TNL204", func(body, "x, y"))
    assert "NaN" in f.message
    assert "negative" in f.message


def test_tnl204_keras_ops_power():
    src = """\
        import keras


        def f(a, b):
            d = keras.ops.sum(keras.ops.square(a - b), axis=-1)
            return keras.ops.power(d, 0.5)
        """
    assert len(hits("TNL204", src)) == 1


@pytest.mark.parametrize(
    "expr",
    [
        "tf.pow(tf.maximum(d, 1e-12), 0.5)",
        "tf.pow(tf.clip_by_value(d, 1e-6, 1e6), 0.25)",
        "tf.pow(d, 2)",
        "d ** 2",
        "tf.pow(d, 3.0)",
        "tf.matmul(x, y) * d_k ** -0.5",  # a python scalar, not a tensor
    ],
)
def test_tnl204_silent(expr):
    body = f"d = tf.reduce_sum(tf.square(x - y), axis=-1)\nreturn {expr}"
    assert hits("TNL204", func(body, "x, y, d_k=64")) == []


GEM = """\
    import tensorflow as tf


    class Pool(tf.keras.layers.Layer):
        def build(self, shape):
            self.p = self.add_weight(shape=(), initializer="ones")
            self.q = tf.Variable(3.0)
            self.r = 3.0

        def call(self, x):
            h = tf.nn.relu(x)
            a = tf.pow(tf.reduce_mean(h, axis=1), 1.0 / self.p)
            b = tf.reduce_mean(h, axis=1) ** self.q
            c = tf.pow(tf.reduce_mean(tf.maximum(h, 1e-6), axis=1), 1.0 / self.p)
            d = tf.pow(tf.reduce_mean(h, axis=1), self.r)
            return a + b + c + d
    """


def test_tnl204_a_trained_exponent_on_a_base_that_can_be_zero():
    """GeM pooling: a trained exponent leaves any integer, and x ** p's gradient is NaN at a
    base of 0 for any p; a clamped base or a fixed integer exponent is not flagged."""
    found = hits("TNL204", GEM)
    assert [f.line for f in found] == [12, 13]
    assert "`self.p` is a trainable weight" in found[0].message
    assert "`self.q` is a trainable weight" in found[1].message
    assert all("NaN" in f.message for f in found)


# -- TNL205 inverse-trig-domain ---------------------------------------------------------


def test_tnl205_acos_of_cosine_similarity():
    src = """\
        import tensorflow as tf


        def angle(a, b):
            cos = tf.reduce_sum(tf.math.l2_normalize(a, -1) * tf.math.l2_normalize(b, -1), axis=-1)
            return tf.math.acos(cos)
        """
    [f] = hits("TNL205", src)
    assert (f.line, f.column) == (6, 12)
    assert "±1" in f.message
    assert "acos" in f.message


@pytest.mark.parametrize("fn", ["tf.math.acos", "tf.math.asin", "tf.math.atanh", "tf.acos"])
def test_tnl205_each_function(fn):
    body = f"cos = tf.reduce_sum(a * b, axis=-1)\nreturn {fn}(cos)"
    assert len(hits("TNL205", func(body, "a, b"))) == 1


def test_tnl205_keras_arccos():
    src = """\
        import keras


        def angle(a, b):
            return keras.ops.arccos(keras.ops.sum(a * b, axis=-1))
        """
    assert len(hits("TNL205", src)) == 1


@pytest.mark.parametrize(
    "expr",
    [
        "tf.math.acos(tf.clip_by_value(cos, -1 + 1e-7, 1 - 1e-7))",
        "tf.math.asin(tf.clip_by_value(cos, -0.999, 0.999))",
        "tf.math.atanh(0.5 * tf.tanh(cos))",
    ],
)
def test_tnl205_silent(expr):
    assert hits("TNL205", func(f"return {expr}", "cos")) == []


# -- TNL206 reciprocal-of-possible-zero -------------------------------------------------


def test_tnl206_rsqrt_of_moments_variance():
    src = """\
        import tensorflow as tf


        def normalise(x):
            mean, variance = tf.nn.moments(x, axes=[0])
            return (x - mean) * tf.math.rsqrt(variance)
        """
    [f] = hits("TNL206", src)
    assert (f.line, f.column) == (6, 25)
    assert "variance" in f.message
    assert "inf" in f.message


@pytest.mark.parametrize(
    "expr",
    [
        "tf.math.reciprocal(tf.nn.relu(x))",
        "1.0 / tf.reduce_sum(tf.nn.relu(x))",
        "tf.math.rsqrt(tf.math.reduce_variance(x, axis=0))",
    ],
)
def test_tnl206_fires(expr):
    assert len(hits("TNL206", func(f"return {expr}"))) == 1


@pytest.mark.parametrize(
    "body",
    [
        "mean, variance = tf.nn.moments(x, axes=[0])\nreturn (x - mean) * tf.math.rsqrt(variance + 1e-5)",
        "return tf.math.rsqrt(tf.maximum(tf.math.reduce_variance(x), 1e-6))",
        "return 1.0 / x",  # an unknown parameter
        "return tf.math.reciprocal(tf.exp(x))",
    ],
)
def test_tnl206_silent(body):
    assert hits("TNL206", func(body)) == []


def test_a_message_describes_a_converted_parameter_and_a_squared_difference_as_written():
    """``tf.convert_to_tensor(self.c)`` is not "a constant", and ``(c - 1.) ** 2`` is not
    ``c - 1.0**2`` (review round 16: TFP's Pareto variance)."""
    src = """\
        import tensorflow as tf


        class Spread:
            def variance(self):
                c = tf.convert_to_tensor(self.concentration)
                return self.scale**2 * c / ((c - 1.0) ** 2 * (c - 2.0))
        """
    [f] = hits("TNL201", src)
    assert "a constant" not in f.message
    assert "((`c` - 1.0)**2)" in f.message or "(`c` - 1.0)**2" in f.message, f.message
    bare = src.replace(
        "import tensorflow as tf", "from tensorflow import convert_to_tensor as to_t"
    )
    [g] = hits("TNL201", bare.replace("tf.convert_to_tensor", "to_t"))
    assert "a constant" not in g.message
