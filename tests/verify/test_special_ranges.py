"""Branch-refined ranges of `tf.where` and the ranges of untraced special functions (lbeta,
log_gamma_difference, lgamma, digamma) carried into the probe: a witness they rule out is no
witness, an unknown call or an unbounded branch changes nothing."""

from __future__ import annotations

import math
import textwrap

import pytest

tf = pytest.importorskip("tensorflow")

import libcst as cst  # noqa: E402
import scipy.special as scipy_special  # noqa: E402  (the test extra installs it)

from tfnumlint.analysis.context import Context  # noqa: E402
from tfnumlint.analysis.module import build  # noqa: E402
from tfnumlint.analysis.special import special_range  # noqa: E402
from tfnumlint.config import Settings  # noqa: E402
from tfnumlint.engine import LintOptions, lint_source  # noqa: E402
from tfnumlint.ruledocs import all_docs  # noqa: E402
from tfnumlint.source import Source  # noqa: E402
from tfnumlint.verify import intervals as iv  # noqa: E402
from tfnumlint.verify import probing  # noqa: E402

INF = math.inf
F32_MAX = float(tf.float32.max)

TWO_PIECE = """\
    import numpy as np
    import tensorflow as tf
    from tensorflow_probability.python.internal import dtype_util
    from tensorflow_probability.python.math import special


    class Skewed:
        def mean(self):
            df = tf.convert_to_tensor(self.df)
            skewness = tf.convert_to_tensor(self.skewness)
            numpy_dtype = dtype_util.as_numpy_dtype(self.dtype)
            half = numpy_dtype(0.5)
            one = numpy_dtype(1.)
            two = np.float32(2.)
            very_small_df = df <= one
            safe_df = tf.where(very_small_df, BRANCH, df)
            return two * tf.math.sqrt(safe_df) * (skewness - 1.) / (
                (safe_df - one) * tf.math.exp(CALL(half, half * safe_df)))
    """

CHI = """\
    import numpy as np
    import tensorflow as tf
    from tensorflow_probability.python.math import special


    class Chi:
        def mean(self, df=None):
            df = tf.convert_to_tensor(self.df if df is None else df)
            return np.sqrt(2.) * tf.exp(-special.log_gamma_difference(0.5, 0.5 * df))
    """


def verified(code: str, rule: str) -> tuple[dict, dict]:
    text = textwrap.dedent(code)
    options = LintOptions(codes=frozenset(all_docs()), slice_probes=True)
    result = lint_source(Source("m.py", text, text.encode()), options)
    [finding] = [f for f in result.findings if f.rule == rule]
    return finding.probe, probing.verify(finding.probe, 1e6)


def two_piece(branch: str = "two", call: str = "special.lbeta") -> str:
    return TWO_PIECE.replace("BRANCH", branch).replace("CALL", call)


def test_a_where_branch_bounded_by_its_condition_refutes_the_division():
    _, out = verified(two_piece(), "TNL201")
    assert out["status"] == "refuted", out
    assert out["detail"].startswith("denominator is within"), out["detail"]
    assert "`df` > 1 on the else branch" in out["detail"]
    assert "`lbeta(x, y)` lies in [-43.79, 1.145]" in out["detail"]


def test_a_zero_branch_keeps_the_division_open():
    probe, out = verified(two_piece(branch="np.float32(0.)"), "TNL201")
    assert out["status"] != "refuted", out
    assert not any(d["strong"] and "lbeta" in d["why"] for d in probe.get("domains", []))


def test_an_untraced_unknown_call_gets_no_range():
    probe, out = verified(two_piece(call="special.owens_t"), "TNL201")
    [spec] = [d for d in probe.get("domains", []) if "owens_t" in d["name"]] or [None]
    assert spec is None or not spec["strong"]
    assert out["status"] != "refuted", out


def test_exp_of_minus_a_log_gamma_difference_never_overflows():
    _, out = verified(CHI, "TNL301")
    assert out["status"] == "refuted", out
    assert "never overflows" in out["detail"]
    assert "log_gamma_difference(x, y)` lies in [-44.36, inf]" in out["detail"]


def select_range(fn, lo=-INF, hi=INF):
    cf = tf.function(fn).get_concrete_function(tf.TensorSpec([None], tf.float32, name="in_0"))
    out = iv.analyse(cf.graph, {"in_0": (lo, hi)}, "float32")
    result = cf.outputs[0]
    return out[result.op.inputs[0].name if result.op.type == "Identity" else result.name]


@pytest.mark.parametrize(
    "fn, lo_positive",
    [
        (lambda x: tf.where(x <= 1.0, 2.0, x) - 1.0, True),
        (lambda x: tf.where(tf.math.less_equal(x, 1.0), 2.0, x) - 1.0, True),
        (lambda x: tf.where(tf.logical_not(x > 1.0), 2.0, x) - 1.0, True),
        (lambda x: tf.where(tf.math.less(1.0, x), x, 3.0) - 1.0, True),
        (lambda x: tf.where(x <= 1.0, 0.0, x) - 1.0, False),  # the then branch reaches 0 - 1
        (lambda x: tf.where(x >= 1.0, 2.0, x) - 1.0, False),  # the else branch is x < 1
        (lambda x: tf.where(x > 0.0, x, 1.0), False),  # a subnormal x > 0 may flush to 0
    ],
)
def test_a_select_branch_is_restricted_by_its_condition(fn, lo_positive):
    assert (select_range(fn)[0] > 0) is lo_positive


X_EDGES = [1e-30, 1e-6, 0.5, 1.0, 1.4616, 3.0, 1e3, 1e7, 3e7, 1e20, F32_MAX]


def _box(lo: float, hi: float) -> list[float]:
    return [v for v in X_EDGES if lo <= v <= hi] + [lo, hi]


@pytest.mark.parametrize("x, y", [((0.5, 0.5), (0.5, INF)), ((1e-3, 2.0), (1e-6, 1e30))])
def test_the_lbeta_bound_holds_at_extreme_arguments(x, y):
    found = special_range("lbeta", [x, y], F32_MAX)
    values = [scipy_special.betaln(a, b) for a in _box(*x) for b in _box(*y) if b < INF]
    assert found is not None and all(found.lo <= v <= found.hi for v in values)
    assert math.isclose(found.hi, max(values), rel_tol=1e-6)


@pytest.mark.parametrize("x, y", [((0.5, 0.5), (0.0, INF)), ((0.0, 4.0), (0.25, 1e12))])
def test_the_log_gamma_difference_bound_holds_at_extreme_arguments(x, y):
    found = special_range("log_gamma_difference", [x, y], F32_MAX)
    assert found is not None
    for a in _box(*x):
        for b in _box(*y):
            if 0 < b < 1e8:  # beyond, float64 lgamma differences cancel to noise
                v = scipy_special.gammaln(b) - scipy_special.gammaln(a + b)
                assert found.lo - 1e-6 <= v <= found.hi, (a, b, v)
    # at the top of y, lgamma(y) - lgamma(x + y) = -x log y - x (x - 1) / (2 y) + O(1 / y^2)
    top = min(y[1], F32_MAX)
    assert math.isclose(found.lo, -x[1] * math.log(top), rel_tol=1e-6)


def test_the_lgamma_and_digamma_bounds_hold_against_tensorflow():
    xs = [1e-30, 1e-3, 0.5, 1.4616, 2.0, 40.0, 1e6, 1e30]
    lg = special_range("lgamma", [(1e-30, 1e30)], F32_MAX)
    dg = special_range("digamma", [(1e-3, 1e30)], F32_MAX)
    assert lg is not None and dg is not None
    tf_lg = tf.math.lgamma(tf.constant(xs, tf.float64)).numpy()
    assert all(lg.lo <= v <= lg.hi for v in tf_lg)
    assert math.isclose(lg.lo, -0.1214862905, rel_tol=1e-6)
    tf_dg = tf.math.digamma(tf.constant(xs[1:], tf.float64)).numpy()
    assert all(dg.lo <= v <= dg.hi for v in tf_dg)
    assert math.isclose(dg.lo, float(tf_dg[0]), rel_tol=1e-8)


@pytest.mark.parametrize(
    "word, args",
    [
        ("lbeta", [(-1.0, 2.0), (0.5, 1.0)]),  # a non-positive argument: unbounded
        ("lbeta", [(0.5, 1.0)]),  # tf.math.lbeta: one vector argument, not this function
        ("lgamma", [(-INF, INF)]),
        ("digamma", [(0.0, 1.0)]),
        ("owens_t", [(0.0, 1.0), (0.0, 1.0)]),
    ],
)
def test_arguments_outside_a_bound_s_domain_give_no_range(word, args):
    assert special_range(word, args, F32_MAX) is None


def values_passed(src: str) -> list:
    """The static values of the arguments of the call `probe(...)` in ``src``."""
    ctx = Context(build(cst.parse_module(textwrap.dedent(src))), Settings())
    site = next(s for s in ctx.info.calls if ctx.code(s.node.func) == "probe")
    return [ctx.ev.value(a.value, site.scope, site.order) for a in site.node.args]


def test_a_numpy_dtype_cast_of_a_literal_is_that_constant():
    one, other = values_passed(
        """\
        from tensorflow_probability.python.internal import dtype_util
        numpy_dtype = dtype_util.as_numpy_dtype(dt)
        probe(numpy_dtype(1.), unknown_cast(1.))
        """
    )
    assert (one.lo, one.hi, one.const) == (1.0, 1.0, 1.0)
    assert other.const is None


def test_finfo_constants_are_positive():
    [tiny, eps, bits] = values_passed(
        """\
        import numpy as np
        probe(np.finfo(np.float32).tiny, np.finfo(dt).eps, np.finfo(dt).bits)
        """
    )
    assert tiny.lo > 0 and eps.lo > 0
    assert bits.lo == -INF  # not one of the positive float constants
