"""Inputs that are constants of the code: a literal, cast to a dtype or bound to a name.

The slicer stops at what it cannot see into, so ``half = dtype_util.as_numpy_dtype(dtype)(0.5)``
or ``numpy_dtype(94.5)`` reach the probe as inputs.  They are not free: the program fixes their
value, and a witness that moves them breaks the program.  This module reads that value from
the code (the binding, the literal, the cast), never from the name (issue 22).
"""

from __future__ import annotations

import math
import re

import libcst as cst

from .domain_model import Domain
from .names import dotted_name
from .values import literal_number

# Constants of the NumPy and math APIs (a user's `pi = 3` is read from its binding instead).
_API_CONSTANTS = {
    "numpy.pi": math.pi,
    "numpy.e": math.e,
    "math.pi": math.pi,
    "math.e": math.e,
}
# Calls that return their first argument's value as a tensor or a NumPy scalar of some dtype.
_CASTS = frozenset(
    {
        "numpy.float16",
        "numpy.float32",
        "numpy.float64",
        "numpy.array",
        "numpy.asarray",
        "tensorflow.constant",
        "tensorflow.cast",
        "tensorflow.convert_to_tensor",
    }
)
_MAX_HOPS = 4  # names bound to names bound to casts: enough for library code, never a loop


def constant_domain(ctx, name: str, scope) -> Domain | None:
    """The single value the code fixes for the input ``name`` (its text), or None."""
    text = re.sub(r" \(\d+\)$", "", name)
    try:
        node = cst.parse_expression(text)
    except cst.ParserSyntaxError:
        return None
    found = _constant(ctx, node, scope, _MAX_HOPS)
    if found is not None:
        value, shown = found
        why = f"it is the constant {value:g}" + (f" (`{shown}`)" if shown != text else "")
        return Domain(name, value, value, False, why, strong=True)
    applied = _applied_to_literal(ctx, node, scope, _MAX_HOPS)
    if applied is None:
        return None
    value, shown = applied
    why = f"the code fixes it: `{shown}`, a call on the literal {value:g} (taken as {value:g})"
    return Domain(name, value, value, False, why, strong=False)


def _applied_to_literal(ctx, node: cst.BaseExpression, scope, hops: int):
    """``numpy_dtype(0.5)`` where ``numpy_dtype`` is a parameter, or a name bound to it (also
    through ``half, one = [numpy_dtype(n) for n in (0.5, 1)]``): a function of a literal the
    code fixes.  Most likely a cast, but what the callee is, is not in view: weak evidence
    (a witness elsewhere is inconclusive, never refuted, and the probe is not pinned)."""
    if hops < 0:
        return None
    if isinstance(node, cst.Call):
        positional = [a for a in node.args if a.keyword is None and not a.star]
        if len(positional) != 1 or len(node.args) != 1:
            return None
        inner = _constant(ctx, positional[0].value, scope, hops - 1)
        return (inner[0], ctx.code(node)) if inner else None
    if isinstance(node, cst.Name):
        bindings = scope.bindings_of(node.value)
        if len(bindings) != 1:
            return None
        b = bindings[0]
        if b.index is None and b.value is not None:
            return _applied_to_literal(ctx, b.value, b.scope, hops - 1)
        if b.index is not None and isinstance(b.value, cst.ListComp):
            element = _comprehension_element(ctx, b.value, b.index, b.scope)
            return _applied_to_literal(ctx, element, b.scope, hops - 1) if element else None
    return None


def _comprehension_element(ctx, comp: cst.ListComp, index: int, scope):
    """Element ``index`` of ``[f(n) for n in (0.5, 1, 2)]`` (or ``(0.5,) + tuple(range(1, 8))``)
    with the loop variable replaced by its literal: ``f(0.5)``."""
    target = comp.for_in.target
    if comp.for_in.inner_for_in is not None or not isinstance(target, cst.Name):
        return None
    values = _literal_sequence(ctx, comp.for_in.iter, scope)
    if values is None or not 0 <= index < len(values):
        return None
    literal = cst.Float(repr(float(values[index])))
    return comp.elt.visit(_Replace(target.value, literal))


def _literal_sequence(ctx, node: cst.BaseExpression, scope) -> list[float] | None:
    if isinstance(node, (cst.Tuple, cst.List)):
        found = [_constant(ctx, e.value, scope, 0) for e in node.elements]
        return [f[0] for f in found] if all(found) else None  # type: ignore[index]
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        left = _literal_sequence(ctx, node.left, scope)
        right = _literal_sequence(ctx, node.right, scope)
        return left + right if left is not None and right is not None else None
    if isinstance(node, cst.Call) and dotted_name(node.func) in ("tuple", "list") and node.args:
        return _literal_sequence(ctx, node.args[0].value, scope)
    if isinstance(node, cst.Call) and dotted_name(node.func) == "range":
        ends = [_constant(ctx, a.value, scope, 0) for a in node.args]
        if not ends or not all(ends) or len(ends) > 2:
            return None
        bounds = [int(e[0]) for e in ends]  # type: ignore[index]
        lo, hi = (0, bounds[0]) if len(bounds) == 1 else (bounds[0], bounds[1])
        return [float(v) for v in range(lo, min(hi, lo + 64))]
    return None


class _Replace(cst.CSTTransformer):
    def __init__(self, name: str, value: cst.BaseExpression) -> None:
        self.name, self.value = name, value

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return self.value if original.value == self.name else updated


def _constant(ctx, node: cst.BaseExpression, scope, hops: int) -> tuple[float, str] | None:
    """(value, code that fixes it) of a literal number, an API constant, a cast of a constant,
    or a name whose every binding in view is the same constant."""
    if hops < 0:
        return None
    if isinstance(node, (cst.Integer, cst.Float)):
        value = literal_number(node)  # not evaluated_value: it compiles, 60 us a literal
        return (value, node.value) if value is not None else None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _constant(ctx, node.expression, scope, hops)
        return (-inner[0], f"-{inner[1]}") if inner else None
    if isinstance(node, cst.Attribute):
        path = ctx.info.imports.path(node)
        if path in _API_CONSTANTS:
            return _API_CONSTANTS[path], dotted_name(node)
        return None
    if isinstance(node, cst.Call):
        return _cast_constant(ctx, node, scope, hops)
    if isinstance(node, cst.Name):
        return _bound_constant(ctx, node.value, scope, hops)
    return None


def _cast_constant(ctx, call: cst.Call, scope, hops: int) -> tuple[float, str] | None:
    """``np.float32(0.5)``, ``tf.constant(1., dtype)``, ``x.dtype.as_numpy_dtype(2.)``,
    ``dtype_util.as_numpy_dtype(dtype)(0.5)`` and a name bound to such a caster."""
    positional = [a for a in call.args if a.keyword is None]
    if not positional or positional[0].star or not _is_caster(ctx, call.func, scope, hops):
        return None
    inner = _constant(ctx, positional[0].value, scope, hops - 1)
    return (inner[0], ctx.code(call)) if inner else None


def _is_caster(ctx, func: cst.BaseExpression, scope, hops: int) -> bool:
    if ctx.info.imports.path(func) in _CASTS:
        return True
    if isinstance(func, cst.Attribute) and func.attr.value == "as_numpy_dtype":
        return True  # TF's DType.as_numpy_dtype: the NumPy type itself
    if isinstance(func, cst.Call):  # TFP's dtype_util.as_numpy_dtype(dtype)
        return dotted_name(func.func).rsplit(".", 1)[-1] == "as_numpy_dtype"
    if isinstance(func, cst.Name) and hops > 0:
        bindings = scope.bindings_of(func.value)
        return bool(bindings) and all(
            b.value is not None and b.index is None and _is_caster(ctx, b.value, b.scope, hops - 1)
            for b in bindings
        )
    return False


def _bound_constant(ctx, name: str, scope, hops: int) -> tuple[float, str] | None:
    bindings = scope.bindings_of(name)
    if not bindings or any(b.value is None or b.index is not None for b in bindings):
        return None
    found = [_constant(ctx, b.value, b.scope, hops - 1) for b in bindings]
    if any(f is None for f in found) or len({f[0] for f in found if f}) != 1:
        return None
    return found[0]
