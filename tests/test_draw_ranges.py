"""A uniform draw lies between the bounds its call gives it (review round 18, #12).

``tf.random.uniform(shape, minval, maxval)`` and ``tf.random.stateless_uniform(shape, seed,
minval, maxval)`` are in [minval, maxval) (minval 0 and maxval 1 when left out), and so is the
call of a project helper that passes its own parameters on as the bounds.  A draw whose
``minval`` is ``np.finfo(dtype).tiny`` (the smallest positive normal number) is never 0, so the
log of it is no log of 0; a draw whose ``minval`` is 0 still is.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import numpy as np
from test_project import lint_tree, project

from tfnumlint.analysis.module import build
from tfnumlint.analysis.provenance import Evaluator


def under(end: float) -> float:
    """The largest float32 below an open upper end: what the draw's range closes it at."""
    return float(np.nextafter(np.float32(end), np.float32(-np.inf)))


def values(text: str, fn: str) -> dict[str, tuple[float, float]]:
    """Each local name of ``fn`` -> (lo, hi) of its value at the end of the function."""
    info = build(cst.parse_module(textwrap.dedent(text)))
    ev = Evaluator(info)
    scope = info.functions[fn]
    out = {}
    nodes = [cst.Name(name) for name in scope.bindings]  # alive: the evaluator memoises by id
    for node in nodes:
        name = node.value
        v = ev.value(node, scope, 1 << 40)
        out[name] = (v.lo, v.hi)
    return out


def test_a_draw_takes_the_range_of_its_bounds():
    text = """\
        import numpy as np
        import tensorflow as tf


        def f(shape, seed, lo):
            a = tf.random.uniform(shape)
            b = tf.random.uniform(shape, 0.5, 2.0)
            c = tf.random.stateless_uniform(shape, seed, -1.0, 3.0)
            d = tf.random.uniform(shape, minval=np.finfo(np.float32).tiny, maxval=1.0)
            e = tf.random.uniform(shape, minval=lo)
            g = tf.random.normal(shape)
            return a
        """
    got = values(text, "f")
    assert got["a"] == (0.0, under(1.0))
    assert got["b"] == (0.5, under(2.0))
    assert got["c"] == (-1.0, under(3.0))
    assert got["d"] == (1.1754943508222875e-38, under(1.0))
    assert got["e"] == (-float("inf"), under(1.0))  # an unknown minval leaves that end open
    assert got["g"] == (-float("inf"), float("inf"))  # a normal draw has no bound


def test_a_helper_that_passes_its_bounds_on_gives_each_call_the_bounds_it_passes():
    text = """\
        import numpy as np
        import tensorflow as tf


        def draw(shape, minval=0, maxval=None, seed=None):
            with tf.name_scope("draw"):
                return tf.random.stateless_uniform(
                    shape=shape, seed=seed, minval=minval, maxval=maxval)


        def f(shape, dtype):
            a = draw(shape, minval=np.finfo(dtype).tiny, maxval=1.0)
            b = draw(shape)
            c = draw(shape, -2.0, 5.0)
            return a
        """
    got = values(text, "f")
    assert got["a"] == (1.1754943508222875e-38, under(1.0))  # the project's float type: float32
    assert got["b"] == (0.0, under(1.0))  # the defaults: minval 0, maxval None (1)
    assert got["c"] == (-2.0, under(5.0))


def test_a_bound_the_helper_computes_from_a_parameter_is_not_the_argument():
    """The guard: only a bound passed on as it is (or converted) is the call's argument;
    ``minval=lo * 2 - 1`` is not ``lo``, and a minval of 0 still allows 0."""
    text = """\
        import tensorflow as tf


        def shifted(shape, lo):
            return tf.random.uniform(shape, minval=lo * 2.0 - 1.0)


        def f(shape):
            a = shifted(shape, 0.75)
            b = tf.random.uniform(shape, minval=0.0, maxval=1.0)
            return a
        """
    got = values(text, "f")
    assert got["a"] == (-float("inf"), under(1.0))
    assert got["b"][0] == 0.0


LOCAL = """\
    import numpy as np
    import tensorflow as tf


    def draw(shape, minval=0, maxval=None, seed=None):
        return tf.random.stateless_uniform(shape=shape, seed=seed, minval=minval, maxval=maxval)


    def sample_logistic(shape, seed):
        u = draw(shape, minval=np.finfo(np.float32).tiny, maxval=1.0, seed=seed)
        return tf.math.log(u) - tf.math.log1p(-u)
    """


def test_the_log_of_a_helper_draw_bounded_away_from_zero_is_not_flagged(tmp_path):
    """`u` was an unknown value used as a probability: `log(u)` was flagged as a log of 0."""
    root = project(tmp_path, {"m.py": LOCAL})
    assert [line for _, line, rule, *_ in lint_tree(root) if rule == "TNL101"] == []


# a samplers module of the project that wraps the stateless draw (seed handling elided)
WRAPPER = """\
    import tensorflow as tf


    def uniform(shape, minval=0, maxval=None, dtype=tf.float32, seed=None, name=None):
        with tf.name_scope(name or "uniform"):
            return tf.random.stateless_uniform(
                shape=shape, seed=seed, minval=minval, maxval=maxval, dtype=dtype)
    """
CALLER = """\
    import numpy as np
    import tensorflow as tf

    from pkg import samplers


    class Logistic:
        def sample(self, shape, seed):
            u = samplers.uniform(shape, {bounds}dtype=self.dtype, seed=seed)
            return tf.math.log(u) - tf.math.log1p(-u)
    """


def test_a_wrapper_in_another_module_keeps_the_bounds_its_callers_pass(tmp_path):
    bounds = "minval=np.finfo(np.float32).tiny, maxval=1.0, "
    root = project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/samplers.py": WRAPPER,
            "pkg/logistic.py": CALLER.format(bounds=bounds),
        },
    )
    flagged = [(p, line) for p, line, rule, *_ in lint_tree(root) if rule == "TNL101"]
    assert ("pkg/logistic.py", 10) not in flagged
