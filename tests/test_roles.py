"""analysis/roles.py: a value with no producer in view is typed by how its code uses it, and
the finding is the same under any renaming (issue 22: names never decide)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest
from conftest import lint

from tfnumlint.analysis.module import build
from tfnumlint.analysis.provenance import Evaluator
from tfnumlint.analysis.roles import name_roles, scopes_with_roles

GAN = """\
    import tensorflow as tf


    def {d_loss}({real}, {fake}):
        return -tf.reduce_mean(tf.math.log({real}) + tf.math.log(1.0 - {fake}))


    def {g_loss}({fake}):
        return -tf.reduce_mean(tf.math.log({fake}))
    """


@pytest.mark.parametrize(
    "names",
    [
        {"d_loss": "discriminator_loss", "real": "d_real", "fake": "d_fake", "g_loss": "g"},
        {"d_loss": "qzb", "real": "qzc", "fake": "qzd", "g_loss": "qzf"},
    ],
)
def test_a_bernoulli_likelihood_and_a_negative_log_likelihood_are_probabilities_by_use(names):
    found = lint(GAN.format(**names), select=["TNL101"])
    assert sorted(f.line for f in found) == [5, 5, 9], [f.message for f in found]
    assert all("used as a probability" in f.message for f in found)
    assert all("name" not in f.message for f in found)


def test_a_log_that_is_not_negated_is_not_a_probability():
    src = """\
        import tensorflow as tf


        def f(x):
            return tf.reduce_mean(tf.math.log(x))


        def g(x):
            return -tf.math.log(x)
        """
    [f] = lint(src, select=["TNL101"])  # g's surprisal -log(x), not f's mean log
    assert f.line == 9


def test_a_log_of_a_complement_with_an_epsilon_makes_a_probability():
    src = """\
        import tensorflow as tf


        def f(q):
            return tf.math.log(q) - tf.math.log(1.0 - q + 1e-7)
        """
    [f] = lint(src, select=["TNL101"])
    assert "`q`" in f.message and f.column == 12  # log(q), not the guarded complement


@pytest.mark.parametrize("w", ["target_mask", "qzb"])
def test_the_weights_of_a_weighted_mean_can_all_be_zero_by_use(w):
    src = f"""\
        import tensorflow as tf


        def masked_mean(loss, {w}):
            return tf.reduce_sum(loss * {w}) / tf.reduce_sum({w})
        """
    [f] = lint(src, select=["TNL201"])
    assert f"every weight in `{w}` is 0" in f.message


def test_weights_cast_from_an_input_are_weights_by_use():
    src = """\
        import tensorflow as tf


        def seq_loss(losses, m):
            w = tf.cast(tf.reshape(m, [-1]), tf.float32)
            return tf.divide(tf.reduce_sum(losses * w), tf.reduce_sum(w))
        """
    [f] = lint(src, select=["TNL201"])
    assert "every weight in `w` is 0" in f.message


def test_a_sum_that_divides_without_weighting_is_not_a_weight():
    src = """\
        import tensorflow as tf


        def normalise(x, y):
            return x / tf.reduce_sum(y)
        """
    assert lint(src, select=["TNL201"]) == []


def test_a_weighted_mean_through_named_sums_is_read_through_the_names():
    src = """\
        import tensorflow as tf


        def masked_mean(values, m):
            m = tf.cast(m, values.dtype)
            total = tf.reduce_sum(values * m)
            count = tf.reduce_sum(m)
            return total / count
        """
    [f] = lint(src, select=["TNL201"])
    assert "reduce_sum(`m`) is exactly 0 when the mask is all zeros" in f.message


def test_a_complement_bound_to_a_name_then_logged_makes_a_probability():
    src = """\
        import tensorflow as tf


        def f(a):
            b = 1 - a
            return tf.math.log(a) + tf.math.log(b)
        """
    assert [f.column for f in lint(src, select=["TNL101"])] == [12, 29]


@pytest.mark.parametrize("gate", ["mask", "qzb"])
def test_an_optional_factor_is_an_elementwise_gate_whatever_its_name(gate):
    """`def f(x, m=None)`, used only as `x * m`: the product stays in its factor's range and is
    0 where the gate is (the masked softmax of a pooling layer); without the default it is an
    ordinary free input."""
    src = f"""\
        import tensorflow as tf


        def pool(x, {gate}=None):
            s = tf.nn.softmax(x) * tf.cast({gate}, x.dtype)
            return x / tf.reduce_sum(s)
        """
    [f] = lint(src, select=["TNL201"])
    assert "reduce_sum(`s` = softmax(`x`) * " in f.message  # in [0, 1], 0 where it saturates
    free = src.replace(f"{gate}=None", gate)
    assert lint(free, select=["TNL201"]) == []  # nothing says where a free factor is 0


@pytest.mark.parametrize("complement", ["1 - q", "1.0 - q + 1e-7", "1e-7 + 1 - q"])
def test_every_spelling_of_a_guarded_complement_makes_a_probability(complement):
    src = f"""\
        import tensorflow as tf


        def f(q):
            return tf.math.log(q) - tf.math.log({complement})
        """
    assert [f.column for f in lint(src, select=["TNL101"])][:1] == [12]


@pytest.mark.parametrize("eps", ["eps", "qzb"])
def test_a_parameter_only_ever_added_where_zero_is_the_danger_is_an_epsilon(eps):
    src = f"""\
        import tensorflow as tf


        def normalise(x, {eps}):
            n = tf.norm(x, axis=-1, keepdims=True)
            return x / (n + {eps}) + tf.math.log(n + {eps})
        """
    assert lint(src, select=["TNL201", "TNL101", "TNL102"]) == []  # a positive guard
    fn = cst.parse_module(textwrap.dedent(src)).body[1]
    assert isinstance(fn, cst.FunctionDef)
    assert name_roles(fn, _op).guards == {eps}  # `n` is a guarded value, not a guard
    used = src.replace(
        f"+ tf.math.log(n + {eps})", f"+ {eps} * x"
    )  # also a scale: not only a guard
    fn = cst.parse_module(textwrap.dedent(used)).body[1]
    assert isinstance(fn, cst.FunctionDef) and eps not in name_roles(fn, _op).guards


@pytest.mark.parametrize(
    ("body", "guards"),
    [
        ("tf.math.log(s + 1e-7)", set()),  # beside a literal, `s` is the guarded value
        ("tf.math.log(s + t)", set()),  # two bare parameters: use cannot say which guards
        ("tf.math.log(s + K.epsilon())", set()),  # a setting, not a tensor
        ("tf.math.log(s + self.eps)", set()),
        ("tf.math.log(tf.nn.softmax(s) + t)", {"t"}),  # added to a computed value
        ("tf.maximum(s, 1e-7)", set()),
        ("tf.maximum(tf.reduce_sum(s), t)", {"t"}),
    ],
)
def test_a_guard_is_what_is_added_to_a_computed_value(body, guards):
    fn = cst.parse_module(f"def f(s, t):\n    return {body}\n").body[0]
    assert isinstance(fn, cst.FunctionDef) and name_roles(fn, _op).guards == guards


def test_a_softmax_in_a_parameter_guarded_by_a_literal_keeps_its_caller_domain():
    src = """\
        import tensorflow as tf


        def collapse(s):
            return tf.reduce_mean(tf.math.log(s + 1e-7))


        def loss(x, w):
            return collapse(tf.nn.softmax(tf.matmul(x, w)))
        """
    assert [f.line for f in lint(src, select=["TNL102"])] == [5]


def _op(call: cst.Call) -> str | None:
    """The canonical op of a `tf.<...>.<name>` call, for the roles walk alone."""
    from tfnumlint.analysis.names import dotted_name

    last = dotted_name(call.func).rsplit(".", 1)[-1]
    return last or None


SCALED_IN_PLACE = """\
import tensorflow as tf


def pool(x, gate=None):
    s = tf.nn.softmax(x)
    if gate is not None:
        s *= gate
    return s


def plain(x, y):
    return tf.concat([x, y], axis=0)
"""


def _sources() -> list[str]:
    root = Path(__file__).resolve().parent.parent
    texts = [
        SCALED_IN_PLACE,
        textwrap.dedent(GAN.format(d_loss="d", real="r", fake="f", g_loss="g")),
    ]
    return texts + [p.read_text() for p in sorted((root / "examples").glob("*.py"))]


@pytest.mark.parametrize("text", _sources())
def test_the_evaluator_skips_no_scope_that_has_a_role(text):
    """The evaluator walks only the bodies that hold an operation a role reads
    (``scopes_with_roles``): every scope's roles are the full walk's, `x *= m` included."""
    info = build(cst.parse_module(text))
    ev = Evaluator(info)
    scopes = [s for s in info.scopes if isinstance(s.node, (cst.FunctionDef, cst.Module))]
    assert scopes
    for scope in scopes:
        assert ev.roles(scope) == name_roles(scope.node, ev.op), scope.name


def test_an_in_place_product_is_a_factor_use():
    info = build(cst.parse_module(SCALED_IN_PLACE))
    pool, plain = (info.functions[name] for name in ("pool", "plain"))
    assert Evaluator(info).roles(pool).factors == {"gate"}
    assert id(plain) not in scopes_with_roles(info, Evaluator(info).op)
