"""TNL101-TNL106: logarithms of probabilities and unbounded values, and their hand-written forms."""

from __future__ import annotations

import pytest
from conftest import func, hits, rules_of

# -- TNL101 log-of-probability ----------------------------------------------------------


def test_tnl101_log_of_softmax_position_and_message():
    src = """\
        import tensorflow as tf


        def nll(logits, labels):
            probs = tf.nn.softmax(logits)
            return -tf.reduce_sum(labels * tf.math.log(probs), axis=-1)
        """
    [f] = hits("TNL101", src)
    assert (f.line, f.column) == (6, 36)  # at `tf.math.log(`
    assert (f.end_line, f.end_column) == (6, 54)
    assert f.severity == "error"
    assert f.name == "log-of-probability"
    assert "-inf" in f.message
    assert "NaN" in f.message
    assert "probs" in f.message


@pytest.mark.parametrize(
    "expr",
    [
        "tf.math.log(tf.sigmoid(logits))",
        "tf.math.log(1 - tf.sigmoid(logits))",
        "tf.math.log(tf.nn.softmax(logits, axis=-1))",
        "tf.math.log(tf.keras.activations.sigmoid(logits))",
    ],
)
def test_tnl101_fires_on_activation_outputs(expr):
    src = f"""\
        import tensorflow as tf


        def loss(logits):
            return -tf.reduce_mean({expr})
        """
    assert len(hits("TNL101", src)) == 1


def test_tnl101_probability_by_its_use_not_by_its_name():
    # the discriminator's loss: a negated mean of log(a), and the log of 1 - b, make `a` and
    # `b` probabilities whatever they are called (issue 22: names never decide)
    src = """\
        import tensorflow as tf


        def discriminator_loss(a, b):
            return -tf.reduce_mean(tf.math.log(a) + tf.math.log(1.0 - b))
        """
    findings = hits("TNL101", src)
    assert len(findings) == 2
    assert all("is used as a probability here" in f.message for f in findings)
    assert "`a` is used as a probability" in findings[0].message
    # the same logs of parameters named like probabilities, with no such use: no finding
    named = """\
        import tensorflow as tf


        def discriminator_scores(d_real, d_fake):
            return tf.math.log(d_real), tf.math.log(d_fake)
        """
    assert hits("TNL101", named) == []


def test_tnl101_picked_probability_through_one_hot():
    src = """\
        import tensorflow as tf


        def nll(logits, labels):
            probs = tf.nn.softmax(logits)
            picked = tf.reduce_sum(probs * tf.one_hot(labels, 10), axis=-1)
            return -tf.reduce_mean(tf.math.log(picked))
        """
    [f] = hits("TNL101", src)
    assert f.line == 7


@pytest.mark.parametrize(
    "body",
    [
        "return tf.math.log(tf.clip_by_value(tf.sigmoid(logits), 1e-7, 1 - 1e-7))",
        "return tf.nn.log_softmax(logits)",
        "return tf.math.log_sigmoid(logits)",
        "return tf.math.log(tf.nn.softmax(logits) + 1e-7)",  # TNL102's, not TNL101's
        "return tf.math.log(tf.maximum(tf.sigmoid(logits), 1e-7))",
        "return tf.math.log(logits)",  # a bare parameter that is not a probability
    ],
)
def test_tnl101_silent(body):
    src = f"""\
        import tensorflow as tf


        def f(logits):
            {body}
        """
    assert hits("TNL101", src) == []


# -- TNL102 log-epsilon-unclipped -------------------------------------------------------


def test_tnl102_a_constant_made_by_tfs_own_cast_is_no_input():
    """TF's ctc_ops writes log(0) as ``log(math_ops.cast(0, dtypes.float64) + 1e-307)``: a
    constant, with no gradient to explode; a cast of a tensor stays flagged."""
    src = """\
        from tensorflow.python.framework import dtypes
        from tensorflow.python.ops import math_ops


        def states(p):
            log_0 = math_ops.log(math_ops.cast(0, dtypes.float64) + 1e-307)
            return log_0 + math_ops.log(math_ops.cast(p, dtypes.float64) + 1e-307)
        """
    [f] = hits("TNL102", src)
    assert f.line == 7


def test_tnl102_gan_generator_loss_position_and_message():
    src = """\
        import tensorflow as tf


        def generator_loss(fake_logits):
            d_fake = tf.sigmoid(fake_logits)
            return -tf.reduce_mean(tf.math.log(d_fake + 1e-10))
        """
    [f] = hits("TNL102", src)
    assert (f.line, f.column) == (6, 28)
    assert f.severity == "warning"
    assert "1e+10" in f.message  # the gradient 1/eps
    assert "-23.0" in f.message  # log(1e-10), the stuck loss


@pytest.mark.parametrize(
    "expr, eps",
    [
        ("tf.math.log(x + 1e-8)", "1e-08"),
        ("tf.math.log(1e-8 + x)", "1e-08"),
        ("tf.math.log(x + EPS)", "1e-06"),
        ("tf.math.log(tf.add(x, 1e-8))", "1e-08"),
        ("tf.math.log(x + 1e-3)", "0.001"),
    ],
)
def test_tnl102_epsilon_forms(expr, eps):
    src = f"""\
        import tensorflow as tf

        EPS = 1e-6


        def f(x):
            return {expr}
        """
    [f] = hits("TNL102", src)
    assert eps in f.message


def test_tnl102_keras_backend_epsilon():
    src = """\
        from tensorflow.keras import backend as K


        def loss(y_true, y_pred):
            return -K.mean(y_true * K.log(y_pred + K.epsilon()))
        """
    [f] = hits("TNL102", src)
    assert "1e-07" in f.message
    assert f.column == 29


@pytest.mark.parametrize(
    "expr",
    [
        "tf.math.log(tf.clip_by_value(x, 1e-7, 1 - 1e-7))",
        "tf.math.log(tf.maximum(x, 1e-7))",
        "tf.math.log(x + 1.0)",  # 1 is not an epsilon (that is log1p territory)
        "tf.math.log(x + 0.5)",
        "tf.math.log1p(x)",
        "tf.math.log(tf.cast(0, tf.float64) + 1e-307) + x",  # a constant: log(0)'s stand-in
    ],
)
def test_tnl102_silent(expr):
    src = f"""\
        import tensorflow as tf


        def f(x):
            return {expr}
        """
    assert hits("TNL102", src) == []


# -- TNL103 cross-entropy-from-probabilities --------------------------------------------


def test_tnl103_binary_cross_entropy_on_sigmoid():
    src = """\
        import tensorflow as tf


        def bce(y, logits):
            p = tf.sigmoid(logits)
            return -tf.reduce_mean(y * tf.math.log(p) + (1 - y) * tf.math.log(1 - p))
        """
    [f] = hits("TNL103", src)  # once per statement
    assert f.line == 6
    assert "sigmoid_cross_entropy_with_logits" in f.message


def test_tnl103_categorical_on_softmax_names_fused_op():
    src = """\
        import tensorflow as tf


        def cce(labels, logits):
            probs = tf.nn.softmax(logits)
            return -tf.reduce_sum(labels * tf.math.log(probs), axis=-1)
        """
    [f] = hits("TNL103", src)
    assert "softmax_cross_entropy_with_logits" in f.message


def test_tnl103_weighted_autoencoder_loss_with_eps():
    # the story: a weighted cross-entropy with +1e-10 inside each log
    src = """\
        import tensorflow as tf


        def reconstruction_loss(p, p_pred):
            return -tf.reduce_sum(
                p * tf.math.log(p_pred + 1e-10) + 0.55 * (1 - p) * tf.math.log(1 - p_pred + 1e-10),
                axis=1,
            )
        """
    assert len(hits("TNL103", src)) == 1
    assert {"TNL102", "TNL103"} <= rules_of(src)


def test_tnl103_tf_multiply_form():
    src = """\
        import tensorflow as tf


        def cce(labels, logits):
            return -tf.reduce_sum(tf.multiply(labels, tf.math.log(tf.nn.softmax(logits))), axis=-1)
        """
    assert len(hits("TNL103", src)) == 1


@pytest.mark.parametrize(
    "body",
    [
        # entropy p * log(p)
        "p = tf.nn.softmax(logits)\nreturn -tf.reduce_sum(p * tf.math.log(p), axis=-1)",
        # the fused op
        "return tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits)",
        # a clipped probability
        "p = tf.clip_by_value(tf.sigmoid(logits), 1e-7, 1 - 1e-7)\nreturn -tf.reduce_mean(y * tf.math.log(p))",
        # a product with a log of something that is not a probability
        "return y * tf.math.log(tf.exp(logits))",
    ],
)
def test_tnl103_silent(body):
    assert hits("TNL103", func(body, "y, logits")) == []


# -- TNL104 log-of-unbounded ------------------------------------------------------------


@pytest.mark.parametrize(
    "expr, what",
    [
        ("tf.math.log(a - b)", "`a` - `b`"),
        ("tf.math.log(tf.matmul(a, b))", "matmul"),
        ("tf.math.log(tf.tanh(a))", "tanh"),
        ("tf.math.log(tf.keras.layers.Dense(1)(a))", "linear"),
    ],
)
def test_tnl104_fires(expr, what):
    src = f"""\
        import tensorflow as tf


        def f(a, b):
            return {expr}
        """
    [f] = hits("TNL104", src)
    assert what in f.message
    assert "-inf" in f.message and "NaN" in f.message


@pytest.mark.parametrize(
    "expr",
    [
        "tf.math.log(x)",  # a bare unknown parameter: too noisy
        "tf.math.log(tf.exp(x))",
        "tf.math.log(tf.nn.softplus(x))",
        "tf.math.log(tf.square(x) + 1e-6)",
        "tf.math.log(tf.clip_by_value(x, 1e-6, 1e6))",
        "tf.math.log(tf.maximum(x, 1e-6))",
    ],
)
def test_tnl104_silent(expr):
    src = f"""\
        import tensorflow as tf


        def f(x):
            return {expr}
        """
    assert hits("TNL104", src) == []


@pytest.mark.parametrize(
    "expr",
    [
        "tf.math.log(1.0 - tf.square(tf.tanh(u)))",  # a tanh-squashed policy's Jacobian
        "tf.math.log(1.0 - tf.tanh(u) ** 2)",
        "tf.math.log(1.0 - tf.tanh(u))",
        "tf.math.log(1.0 + tf.tanh(u))",
        "tf.math.log(1.0 - tf.abs(tf.tanh(u)))",
    ],
)
def test_tnl104_a_gap_that_closes_once_tanh_saturates(expr):
    """tanh rounds to exactly +-1 at a finite input (past about 7.9 in TensorFlow's float32),
    so 1 - tanh(u)**2 is exactly 0 there although its range never goes below 0."""
    [f] = hits("TNL104", func(f"return {expr}", "u"))
    assert "exactly 0 once tanh saturates" in f.message, f.message


@pytest.mark.parametrize(
    "expr",
    [
        "tf.math.log(2.0 - tf.square(tf.tanh(u)))",  # never below 1
        "tf.math.log(1.5 + tf.tanh(u))",
        "tf.math.log(1.0 - tf.square(tf.tanh(u)) + 1e-6)",  # the guard is TNL102's business
    ],
)
def test_tnl104_silent_where_the_gap_never_closes(expr):
    assert hits("TNL104", func(f"return {expr}", "u")) == []


# -- TNL105 log1p-expm1 -----------------------------------------------------------------


@pytest.mark.parametrize("expr", ["tf.math.log(1 + x)", "tf.math.log(x + 1.0)", "tf.exp(x) - 1"])
def test_tnl105_fires(expr):
    src = f"""\
        import tensorflow as tf


        def f(x):
            return {expr}
        """
    [f] = hits("TNL105", src)
    assert f.severity == "info"
    assert "log1p" in f.message or "expm1" in f.message


def test_tnl105_expm1_message_states_hazard():
    src = """\
        import tensorflow as tf


        def f(x):
            return tf.exp(x) - 1.0
        """
    [f] = hits("TNL105", src)
    assert "expm1" in f.message
    assert (f.line, f.column) == (5, 12)


@pytest.mark.parametrize(
    "expr",
    [
        "tf.math.log1p(x)",
        "tf.math.expm1(x)",
        "tf.math.log(1 - tf.sigmoid(x))",  # log(1 - p) is about probabilities, not log1p
        "tf.math.log(1.0 + 2.0)",  # constants
        "tf.exp(x) - y",
    ],
)
def test_tnl105_silent(expr):
    src = f"""\
        import tensorflow as tf


        def f(x, y):
            return {expr}
        """
    assert hits("TNL105", src) == []


# -- TNL106 logsumexp-by-hand -----------------------------------------------------------


def test_tnl106_inline():
    src = """\
        import tensorflow as tf


        def log_partition(scores):
            return tf.math.log(tf.reduce_sum(tf.exp(scores), axis=-1))
        """
    [f] = hits("TNL106", src)
    assert (f.line, f.column) == (5, 12)
    assert "88.7" in f.message
    assert "reduce_logsumexp" in f.message


def test_tnl106_through_assigned_names():
    src = """\
        import tensorflow as tf


        def log_partition(scores):
            e = tf.exp(scores)
            total = tf.reduce_sum(e, axis=-1)
            return tf.math.log(total)
        """
    [f] = hits("TNL106", src)
    assert f.line == 7


@pytest.mark.parametrize(
    "body",
    [
        "return tf.reduce_logsumexp(scores, axis=-1)",
        "z = scores - tf.reduce_max(scores, axis=-1, keepdims=True)\n"
        "return tf.math.log(tf.reduce_sum(tf.exp(z), axis=-1))",
        "return tf.math.log(tf.reduce_sum(scores, axis=-1))",
    ],
)
def test_tnl106_silent(body):
    assert hits("TNL106", func(body, "scores")) == []


def test_tnl104_log_of_raw_placeholder_data():
    src = """\
        import tensorflow.compat.v1 as tf

        x = tf.placeholder(tf.float32, [None, 10])
        features = tf.log(x)
        safe = tf.log(tf.clip_by_value(x, 1e-7, 1e7))
        """
    found = hits("TNL104", src)
    assert [f.line for f in found] == [4]
    assert "placeholder" in found[0].message


# ---------------------------------------------------------------- issue 24: computed thresholds

SATURATION_CASES = [
    # (the log's argument, the rule, the clause its message must carry)
    ("p", "TNL101", "once its logit is below -87.3 in float32"),
    ("1 - p", "TNL101", "once the logit is above 16.6 in float32 (the sigmoid rounds to 1)"),
    ("1. - p", "TNL101", "once the logit is above 16.6 in float32 (the sigmoid rounds to 1)"),
    ("p + 1e-7", "TNL102", "x is exactly 0 once its logit is below -87.3 in float32"),
    ("1 - p + 1e-7", "TNL102", "x is exactly 0 once the logit is above 16.6 in float32"),
    ("q", "TNL101", "once its logit trails the largest by more than 87.3 in float32"),
    ("1 - q", "TNL101", "once its logit leads every other by more than 16.6 in float32"),
    ("q + 1e-7", "TNL102", "once its logit trails the largest by more than 87.3 in float32"),
]


@pytest.mark.parametrize(("arg", "rule", "clause"), SATURATION_CASES)
def test_where_a_probability_under_a_log_is_zero_is_computed_from_the_expression(arg, rule, clause):
    """`1 - sigmoid(z)` is 0 above +16.6, `sigmoid(z)` below -87.3: never a fixed text that
    says -88 for both."""
    body = f"p = tf.sigmoid(z)\nq = tf.nn.softmax(z)\nreturn tf.math.log({arg})"
    [f] = hits(rule, func(body, "z"))
    assert clause in f.message, f.message
    wrong = "above 16.6" if "below" in clause or "trails" in clause else "below -87.3"
    assert wrong not in f.message and "-88" not in f.message


def test_the_thresholds_follow_the_dtype():
    body = "p = tf.sigmoid(tf.cast(z, tf.float16))\nreturn tf.math.log(1 - p)"
    [f] = hits("TNL101", func(body, "z"))
    assert "above 7.62 in float16" in f.message, f.message


def test_tnl104_message_names_a_tensor_of_ones():
    # found in the wild review: `log(tf.ones(t) - eps)` read "log of  - ..." (an empty operand)
    src = """\
        import tensorflow as tf


        def f(t, e):
            return tf.math.log(tf.ones(t) - e)
        """
    [f] = hits("TNL104", src)
    assert f.message.startswith("log of ones - `e`,"), f.message
