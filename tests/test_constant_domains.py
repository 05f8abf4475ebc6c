"""Issue 22: an input the code fixes to one value is that value, read from the code; a name
alone gives an input no domain and two inputs no relation, so a rename keeps every probe."""

from __future__ import annotations

import math
import textwrap

import libcst as cst
import pytest
from test_reachability import one_probe

from tfnumlint.analysis.context import Context
from tfnumlint.analysis.domain_constants import constant_domain
from tfnumlint.analysis.module import build
from tfnumlint.config import Settings


def _scope_and_ctx(src: str):
    ctx = Context(build(cst.parse_module(textwrap.dedent(src))), Settings())
    functions = [s for s in ctx.info.scopes if s.kind == "function"]
    return ctx, (functions[-1] if functions else ctx.info.scopes[0])


@pytest.mark.parametrize(
    "binding, text, value",
    [
        ("", "np.pi", math.pi),
        ("", "math.e", math.e),
        ("", "np.float32(0.5)", 0.5),
        ("", "tf.constant(-2.0, tf.float32)", -2.0),
        ("", "x.dtype.as_numpy_dtype(94.5)", 94.5),
        ("", "dtype_util.as_numpy_dtype(x.dtype)(0.25)", 0.25),
        ("numpy_dtype = dtype_util.as_numpy_dtype(x.dtype)", "numpy_dtype(94.5)", 94.5),
        ("half = np.float32(0.5)", "half", 0.5),
        ("k = 3", "k", 3.0),
        ("c = np.pi", "c", math.pi),
    ],
)
def test_a_constant_of_the_code_is_pinned_to_its_value(binding, text, value):
    src = f"""\
        import math

        import numpy as np
        import tensorflow as tf
        from tensorflow_probability.python.internal import dtype_util


        def f(x):
            {binding}
            return x
        """
    ctx, scope = _scope_and_ctx(src)
    d = constant_domain(ctx, text, scope)
    assert d is not None and d.strong, text
    assert d.lo == d.hi == pytest.approx(value)


@pytest.mark.parametrize(
    "binding, text",
    [
        ("", "half"),  # a parameter named like a constant is a parameter
        ("", "one"),
        ("k = 3\n            k = 4", "k"),  # two different constants
        ("k = np.float32(x)", "k"),  # a cast of a value
        ("", "betainc_a_b_half"),
    ],
)
def test_a_name_or_an_unknown_call_is_not_a_constant(binding, text):
    src = f"""\
        import numpy as np


        def f(x, half, one, dtype, scale_fn):
            {binding}
            return x
        """
    ctx, scope = _scope_and_ctx(src)
    assert constant_domain(ctx, text, scope) is None


BODY = """\
    import tensorflow as tf


    def {f}({x}, {hi}, {lo}):
        return tf.math.log({x} / ({hi} - {lo}))
    """


@pytest.mark.parametrize(
    "names",
    [
        {"f": "uniform_prob", "x": "x", "hi": "high", "lo": "low"},
        {"f": "log1psquare", "x": "kve", "hi": "upper", "lo": "lower"},
        {"f": "g", "x": "a", "hi": "b", "lo": "c"},
    ],
)
def test_a_rename_keeps_the_probe_domains_and_relations(names):
    """`high`/`low`, `kve`, `log1psquare`: names that once gave domains and relations."""
    probe = one_probe(BODY.format(**names), "TNL201")
    assert "domains" not in probe and "relations" not in probe, probe


@pytest.mark.parametrize(
    "binding, text, value",
    [
        ("", "dtype(0.5)", 0.5),  # what `dtype` is, is not in view
        ("half = dtype(0.5)", "half", 0.5),
        ("half, one, two = [dtype(n) for n in (0.5,) + tuple(range(1, 3))]", "two", 2.0),
        ("half, one = [dtype(n) for n in (0.5, 1.0)]", "half", 0.5),
    ],
)
def test_a_call_of_an_unknown_function_on_a_literal_is_a_weak_constant(binding, text, value):
    """Most likely a cast, but the callee is not in view: a witness elsewhere is inconclusive
    (weak), and the probe is not pinned to the guess."""
    src = f"""\
        def f(x, dtype):
            {binding}
            return x
        """
    ctx, scope = _scope_and_ctx(src)
    d = constant_domain(ctx, text, scope)
    assert d is not None and not d.strong, text
    assert d.lo == d.hi == value
