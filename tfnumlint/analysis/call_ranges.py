"""The range an untraced call's value lies in, from the function it calls (static, no TF).

A probe input that is a call the slice did not follow (``tfp.math.log1mexp(x)``,
``special_math.ndtr(z)``, ``dist.cdf(x)``) is free in the probe; when the callee is a known math
function its value lies in that function's range.  Read from what the callee resolves to, never
from a project function's name (issue 22).
"""

from __future__ import annotations

import math

import libcst as cst

from .. import ops
from .names import dotted_name

# The range a known math function's value lies in: (lo, lo_open, hi), keyed by the last word
# of the callee (registered ops: their entry's float range, ops.PRODUCER_RANGES; the rest here) (`tf.math.softplus`, `tfp.math.log1mexp`, `special_math.ndtr`, `inv_probit`).
# A probe input that is such a call (or a name only ever bound to one) is probed inside it.
# Code-derived when the callee resolves to an import from a numerics library, weak when it is
# a method of an object (`dist.cdf(x)`: the library interface it implements), none for a
# function of the project (its name is no evidence, issue 22).  float32 caveats: exp and
# softplus underflow to exactly 0, so they are >= 0 here, not > 0.
_POS = (0.0, True, math.inf)
_NONNEG = (0.0, False, math.inf)
_UNIT = (0.0, False, 1.0)
_NONPOS = (-math.inf, False, 0.0)
PRODUCER_RANGES: dict[str, tuple[float, bool, float]] = {
    **dict.fromkeys(
        ("l2_norm", "reduce_euclidean_norm", "global_norm", "elu_plus_one", "variance", "stddev",
         "reduce_logsumexp_exp", "i0e", "ive", "bessel_ive", "exp2", "cosh"),
        _NONNEG,
    ),
    **dict.fromkeys(
        ("kve", "k0e", "k1e", "bessel_kve", "bessel_k0e", "bessel_k1e", "eps", "epsilon"), _POS
    ),
    **dict.fromkeys(
        ("inv_probit", "ndtr", "cdf", "survival_function", "hard_sigmoid", "betainc",
         "igamma", "igammac", "erfc_half"),
        _UNIT,
    ),
    **dict.fromkeys(
        ("log1mexp", "log_ndtr", "log_cdf", "log_survival_function", "log_sum_of_probabilities"),
        _NONPOS,
    ),
    "erfc": (0.0, False, 2.0),
    "lgamma": (-0.1216, False, math.inf),  # min of log Γ on x > 0 (Γ(1.4616) = 0.8856)
    "eye": (1.0, False, 1.0),  # an identity matrix, probed at its diagonal: its norm is > 0
    "ones_like": (1.0, False, 1.0),
    "i1e": ops.PRODUCER_RANGES["bessel_i1e"],  # odd: negative for a negative input
    **ops.PRODUCER_RANGES,
}  # fmt: skip
# Roots of imports whose functions are what their name says (a resolved call is strong evidence).
_NUMERIC_LIBRARIES = frozenset(
    {"tensorflow", "keras", "tf_keras", "tensorflow_probability", "gpflow", "scipy", "numpy"}
)
# Ranges that hold only for the arguments the library documents (lgamma: x > 0), so weak.
_WEAK_RANGES = frozenset({"lgamma"})


def _callee_word(func: cst.BaseExpression) -> str:
    node = func.attr if isinstance(func, cst.Attribute) else func
    return node.value.lstrip("_").lower() if isinstance(node, cst.Name) else ""


def _library_call(ctx, func: cst.BaseExpression) -> bool:
    """The callee is imported from a numerics library (TF, TFP, GPflow, SciPy, numpy), and not
    from the package the module itself is part of: linting TFP's own source, its
    ``prefer_static.shape`` is a function of the project, known by its body (issue 22)."""
    imports = ctx.info.imports
    if not (
        imports.resolve(func) is not None or imports.path(func).split(".")[0] in _NUMERIC_LIBRARIES
    ):
        return False
    project = getattr(ctx.ev, "project", None)
    return project is None or not project.own_package(dotted_name(func))


def _method_call(ctx, func: cst.BaseExpression) -> bool:
    """``dist.cdf(x)``, ``self.survival_function(y)``: a method of an object, not a module's
    function.  Its name is the library's interface (a TFP/SciPy distribution's ``cdf``), so a
    range read from it is weak evidence; a bare project function's name is none."""
    return isinstance(func, cst.Attribute) and not ctx.info.imports.path(func)


def call_range(ctx, node: cst.BaseExpression) -> tuple[float, bool, float, str, bool] | None:
    """(lo, lo_open, hi, producer word, strong) of a known math function's call (or a subscript
    of one, `tf.norm(x)[..., None]`); None when the callee is not in :data:`PRODUCER_RANGES`."""
    while isinstance(node, cst.Subscript):
        node = node.value
    if not isinstance(node, cst.Call):
        return None
    word = _callee_word(node.func)
    op = ctx.info.imports.op(node.func)
    library = _library_call(ctx, node.func)
    if op is None and not library and not _method_call(ctx, node.func):
        return None  # a function of the project: its name is no evidence (issue 22)
    for key in (op, word):
        if key and key in PRODUCER_RANGES:
            lo, lo_open, hi = PRODUCER_RANGES[key]
            strong = key not in _WEAK_RANGES and library
            return lo, lo_open, hi, key, strong
    return None
