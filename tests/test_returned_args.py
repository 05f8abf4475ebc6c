"""A helper that hands back its own argument gives its call that argument's value (review
round 18, #11).

``def prep(m, c): c = tf.cast(c, m.dtype); return m, c`` returns ``c`` as it was passed (a cast
to a float keeps its values), so ``_, c = prep(m, 0.75)`` is 0.75, not a value computed by an
untraced call; also through another helper that returns the items of ``prep``'s tuple.  A
parameter the helper computes with (``c * 2``), or casts to a whole-number dtype, is not the
argument.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from tfnumlint.analysis.module import build
from tfnumlint.analysis.provenance import Evaluator

HELPERS = """\
    import tensorflow as tf


    def prep(m, s, c):
        m = tf.convert_to_tensor(m)
        s = tf.convert_to_tensor(s, m.dtype)
        c = tf.cast(c, dtype=m.dtype)
        return m, s, c


    def common(m, s, c):
        m, s, c = prep(m, s, c)
        rho = tf.math.rsqrt(c**2 + s**2)
        return rho, m, c


    def scale(c):
        return tf.identity(tf.cast(c, tf.float32))


    def doubled(c):
        return tf.cast(c, tf.float32) * 2.0


    def rounded(c):
        return tf.cast(c, tf.int32)


    def f(m, s):
        rho, m2, c = common(m, s, 0.75)
        one = scale(0.5)
        two = doubled(0.5)
        three = rounded(0.5)
        return rho
    """


def _values() -> dict[str, tuple[float | None, float, float]]:
    info = build(cst.parse_module(textwrap.dedent(HELPERS)))
    ev = Evaluator(info)
    scope = info.functions["f"]
    out = {}
    nodes = [cst.Name(name) for name in scope.bindings]  # alive: the evaluator memoises by id
    for node in nodes:
        name = node.value
        v = ev.value(node, scope, 1 << 40)
        out[name] = (v.const, v.lo, v.hi)
    return out


def test_a_parameter_returned_through_conversions_is_the_argument():
    assert _values()["one"] == (0.5, 0.5, 0.5)


def test_a_tuple_item_returned_through_another_helper_is_the_argument():
    got = _values()
    assert got["c"] == (0.75, 0.75, 0.75)


def test_a_computed_or_rounded_parameter_is_not_the_argument():
    got = _values()
    assert got["two"][0] is None
    assert got["three"][0] is None
    assert got["rho"][0] is None
