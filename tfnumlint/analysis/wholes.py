"""Values that are whole numbers by the code that makes them: sizes and positions (``tf.shape``,
``argmax``, a ``top_k``'s indices: >= 0), roundings and integer casts, and the calls of a
function whose every return is one (a method returning ``ps.shape(x)[-1:]``), so that a probe
input read from such a call is never set to 0.5.  API names decide; a project function by its
body, never by its name (issue 22).  Static: libcst only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import libcst as cst

from .. import ops
from .invariants import callee_scope
from .module import Binding, Scope

Whole = tuple[float, str]  # the lower bound of the whole numbers, and why they are whole
# what a call runs, when the code is in view: the callee's scope, or what the index knows of it
Resolve = Callable[[cst.Call, Scope], "Scope | Whole | None"]

# Calls whose results are whole numbers: sizes and counts (>= 0), and the ones of any sign.
SIZE_CALLS = frozenset(
    {"shape", "size", "rank", "count_nonzero", "bincount", "argmax", "argmin", "argsort",
     "num_elements",
     "shape_tensor", "prefer_static_shape", "prefer_static_size", "prefer_static_rank",
     "confusion_matrix", "histogram_fixed_width"}
)  # fmt: skip
WHOLE_CALLS = ops.WHOLE | {"range", "rint", "to_int32", "to_int64"}  # floor, ceil, round, sign
_INT_DTYPE = re.compile(r"\bu?int(?:8|16|32|64)\b")
# the element of `tf.math.top_k`'s result (values, indices) that holds the indices
_TOP_K_INDICES = 1
MAX_DEPTH = 4  # helpers calling helpers, names bound to names: followed this far
_SHOWN = 48  # a return longer than this is shortened in a reason


def call_word(call: cst.Call) -> str:
    node = call.func
    return node.attr.value if isinstance(node, cst.Attribute) else getattr(node, "value", "")


def top_k_indices(node: cst.BaseExpression, element: object) -> bool | None:
    """True for the indices of a ``top_k`` (``top_k(x)[1]``, ``top_k(x).indices``, the second
    name of ``_, i = top_k(x)``), False for its values, None when ``node`` is no top_k."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Call):
        if call_word(node.value) == "top_k":
            return node.attr.value == "indices"
        return None
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Call):
        if call_word(node.value) != "top_k":
            return None
        index = node.slice[0].slice if len(node.slice) == 1 else None
        value = getattr(index, "value", None)
        return isinstance(value, cst.Integer) and value.evaluated_value == _TOP_K_INDICES
    if isinstance(node, cst.Call) and call_word(node) == "top_k":
        return element == _TOP_K_INDICES
    return None


def whole_call(node: cst.BaseExpression, element: object = None) -> Whole | None:
    """(lower bound, why) when ``node`` (a call, or an item or slice of one; ``element``: the
    item of the tuple it returns that the value is) gives whole numbers by the API it calls."""
    indices = top_k_indices(node, element)
    if indices is not None:
        why = "`top_k`'s indices are positions in its input: whole numbers >= 0"
        return (0.0, why) if indices else None
    while isinstance(node, cst.Subscript):
        node = node.value  # tf.shape(x)[0], shape(x)[-1:]: items of a shape
    if not isinstance(node, cst.Call):
        return None
    what = call_word(node)
    if what in SIZE_CALLS:
        return 0.0, f"`{what}` gives sizes, counts or positions: whole numbers >= 0"
    if what in WHOLE_CALLS:
        return -math.inf, f"`{what}` gives whole numbers"
    if what == "cast" and len(node.args) > 1:
        dtype = cst.Module([]).code_for_node(node.args[1].value)
        if _INT_DTYPE.search(dtype):
            return -math.inf, "it is cast to an integer dtype"
    return None


def whole_source(source: str, element: object = None) -> Whole | None:
    """:func:`whole_call` of a call's text (a probe input's ``source``)."""
    try:
        node = cst.parse_expression(source)
    except cst.ParserSyntaxError:
        return None
    return whole_call(node, element)


def whole_expr(
    expr: cst.BaseExpression, scope: Scope, at: int, lookup, resolve: Resolve, depth: int = 0
) -> Whole | None:
    """``expr`` is a whole number: a call :func:`whole_call` knows, an item or slice of one, a
    name bound to one, or a call of a function whose every return is one."""
    if depth > MAX_DEPTH:
        return None
    found = whole_call(expr)
    if found is not None:
        return found
    while isinstance(expr, cst.Subscript):
        expr = expr.value
    if isinstance(expr, cst.Name):
        bound = lookup(expr.value, scope, at)
        if not isinstance(bound, Binding) or bound.value is None or bound.index is not None:
            return None  # a parameter, an unpacked item, nothing bound here
        return whole_expr(bound.value, bound.scope, bound.at, lookup, resolve, depth + 1)
    if isinstance(expr, cst.Call):
        callee = resolve(expr, scope)
        if isinstance(callee, Scope):
            return whole_returns(callee, lookup, resolve, depth + 1)
        return callee
    return None


def whole_returns(scope: Scope, lookup, resolve: Resolve, depth: int = 0) -> Whole | None:
    """Every ``return`` of the function gives whole numbers: the lowest bound, and why (the
    function and what it returns named: a size >= 0 read through a method is still a size)."""
    if depth > MAX_DEPTH or not scope.returns:
        return None
    found = []
    for at, expr in scope.returns:
        one = whole_expr(expr, scope, at, lookup, resolve, depth)
        if one is None:
            return None
        found.append(one)
    lo = min(f[0] for f in found)
    shown = cst.Module([]).code_for_node(scope.returns[0][1])
    shown = " ".join(shown.split())
    if len(shown) > _SHOWN:
        shown = shown[: _SHOWN - 3] + "..."
    return lo, f"`{scope.name}` returns `{shown}`, and {found[0][1]}"


def local_callee(call: cst.Call, scope: Scope, functions: dict[str, Scope], lookup) -> Scope | None:
    """The function of this module ``call`` runs: a method of the class around ``scope`` called
    on its instance (``self.m(...)``), or a module-level function its name is not rebound from."""
    method = callee_scope(call, scope)
    if method is not None:
        return method
    if isinstance(call.func, cst.Name) and call.func.value in functions:
        bound = lookup(call.func.value, scope, 1 << 30)
        if isinstance(bound, Binding) and bound.value is None:
            return functions[call.func.value]
    return None
