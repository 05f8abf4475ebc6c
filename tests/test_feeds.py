"""A placeholder ranges over what the program feeds it (``analysis/feeds.py``).

Each case is a TF1 program whose feed is NumPy code; the finding for ``log(placeholder)`` must
follow the fed data's range, and never the names involved.
"""

from __future__ import annotations

import math
import textwrap

import libcst as cst
import pytest

from tfnumlint.analysis.module import build
from tfnumlint.analysis.names import descendants
from tfnumlint.analysis.provenance import Evaluator
from tfnumlint.engine import lint_text

HEAD = """
import numpy as np
import tensorflow as tf
rng = np.random.RandomState(0)
y_ph = tf.compat.v1.placeholder(tf.float32, (None, 1))
out = tf.compat.v1.log(y_ph)
"""


def codes_at(body: str, line_of: str = "out = ") -> list[str]:
    text = textwrap.dedent(HEAD) + textwrap.dedent(body)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.startswith(line_of))
    return [f.rule for f in lint_text(text).findings if f.line == line]


def run_with(data: str) -> str:
    return f"""
y_data = {data}
with tf.compat.v1.Session() as sess:
    sess.run(out, feed_dict={{y_ph: y_data[:8]}})
"""


@pytest.mark.parametrize(
    "data",
    [
        "np.exp(1.5 + 0.9 * rng.randn(100, 1))",  # log-normal targets
        "rng.uniform(1.0, 5.0, size=(100, 1)).astype(np.float32)",
        "np.clip(rng.randn(100, 1), 0.1, 3.0)",
        "rng.rand(100, 1) + 0.5",
        "np.abs(rng.normal(0.0, 2.0, (100, 1))) + 1e-3",
        "(rng.randint(1, 7, size=100) * 2.0).reshape(-1, 1)",
    ],
)
def test_positive_feeds_make_the_log_safe(data: str) -> None:
    assert "TNL104" not in codes_at(run_with(data))


@pytest.mark.parametrize(
    "data",
    [
        "rng.randn(100, 1)",  # normal draws straddle 0
        "rng.uniform(-1.0, 1.0, size=(100, 1))",
        "rng.rand(100, 1)",  # includes 0: log(0) = -inf
        "np.load('targets.npy')",  # unknown data: no range
    ],
)
def test_feeds_that_reach_zero_or_below_keep_the_finding(data: str) -> None:
    assert "TNL104" in codes_at(run_with(data))


def test_every_feed_counts_one_unbounded_feed_keeps_it() -> None:
    body = """
y_a = np.exp(rng.randn(10, 1))
y_b = rng.randn(10, 1)
with tf.compat.v1.Session() as sess:
    sess.run(out, {y_ph: y_a})
    sess.run(out, feed_dict={y_ph: y_b})
"""
    assert "TNL104" in codes_at(body)


def test_feed_dict_bound_to_a_name_and_helper_returns_are_followed() -> None:
    body = """
def make(n, scale=2.0):
    x = rng.randn(n, 3)
    return x, np.exp(scale * x[:, :1])

train_x, train_y = make(100)
with tf.compat.v1.Session() as sess:
    feed = {y_ph: train_y[rng.choice(100, 8)]}
    sess.run(out, feed_dict=feed)
"""
    assert "TNL104" not in codes_at(body)


def test_renaming_does_not_change_the_fed_range() -> None:
    body = run_with("np.exp(rng.randn(100, 1))")
    renamed = (
        (textwrap.dedent(HEAD) + textwrap.dedent(body))
        .replace("y_data", "qq")
        .replace("y_ph", "zz")
        .replace("rng", "g7")
    )
    line = next(i for i, t in enumerate(renamed.splitlines(), 1) if t.startswith("out = "))
    assert [f.rule for f in lint_text(renamed).findings if f.line == line] == []


def test_a_log_of_a_relu_output_is_flagged_as_exactly_zero() -> None:
    text = textwrap.dedent(
        """
        import tensorflow as tf
        x = tf.compat.v1.placeholder(tf.float32, (None, 3))
        w = tf.Variable(tf.zeros((3, 1)))
        a = tf.compat.v1.log(tf.nn.relu(tf.matmul(x, w)))
        b = tf.compat.v1.log(tf.nn.relu(tf.matmul(x, w)) + 1e-6)
        """
    )
    found = {f.line: f for f in lint_text(text).findings if f.rule == "TNL104"}
    assert 5 in found and "exactly 0" in found[5].message
    assert 6 not in found  # the epsilon keeps it positive (TNL103 judges the epsilon)


KERAS = """
import numpy as np
import tensorflow as tf
from tensorflow import keras

rng = np.random.default_rng(0)
x = rng.normal(0.0, 1.0, (500, 4)).astype("float32")
y = rng.poisson(3.0, (500, 1)).astype("float32")


def {fn}({a}, {b}):
    return tf.reduce_mean({b} - {a} * tf.math.log({b} + 1e-7), axis=-1)


model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                          keras.layers.Dense(1{act})])
model.compile(optimizer="adam", loss={fn})
model.fit(x, y, batch_size=32)
"""


def keras_findings(act: str, fn: str = "nll", a: str = "t", b: str = "p") -> set[str]:
    text = KERAS.format(fn=fn, a=a, b=b, act=act)
    return {f.rule for f in lint_text(text).findings if f.line == 12}


def test_a_compiled_loss_reads_y_pred_from_the_model_it_is_compiled_with() -> None:
    # a linear last layer: y_pred is a logit, whatever the parameters are called
    linear = keras_findings("")
    assert "TNL503" in linear and "TNL103" not in linear
    assert keras_findings("", fn="bce_loss", a="y_true", b="y_prob") == linear
    # a sigmoid last layer: y_pred is a probability, even when it is called `q`
    sigmoid = keras_findings(', activation="sigmoid"', b="q")
    assert "TNL103" in sigmoid and "TNL503" not in sigmoid


def test_y_true_ranges_over_the_fit_targets() -> None:
    text = textwrap.dedent(
        """
        import numpy as np
        import tensorflow as tf
        from tensorflow import keras
        rng = np.random.default_rng(0)
        x = rng.normal(0.0, 1.0, (500, 4)).astype("float32")
        y = np.exp(rng.normal(1.0, 0.5, (500, 1)))

        def msle(t, p):
            return tf.reduce_mean(tf.square(tf.math.log(t) - tf.math.log(p)))

        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, activation="softplus")])
        model.compile(optimizer="adam", loss=msle)
        model.fit(x, y)
        """
    )
    assert target_range(text) == pytest.approx((math.exp(1.0 - 3.0), math.exp(1.0 + 3.0)))
    unbounded = text.replace("np.exp(rng.normal(1.0, 0.5, (500, 1)))", "np.load('y.npy')")
    assert target_range(unbounded) == (-math.inf, math.inf)


def target_range(text: str) -> tuple[float, float]:
    """The range provenance gives the loss's first parameter where the loss reads it."""
    info = build(cst.parse_module(text))
    ev = Evaluator(info)
    scope = info.functions["msle"]
    order, returned = scope.returns[0]
    t = next(n for n in descendants(returned) if isinstance(n, cst.Name) and n.value == "t")
    val = ev.value(t, scope, order)
    return (val.lo, val.hi)
