"""When a rewrite must not be offered: no TensorFlow in sight, or a guard already there.

* A rewrite puts a TensorFlow op where the code had Python or numpy arithmetic
  (``int(len(batch) / t)`` would become ``int(tf.math.divide_no_nan(...))``, which raises).
  So an operand must have TensorFlow provenance: a TF/Keras call in it, or a value the static
  pass knows is a tensor.
* A division already guarded by its own denominator (``tf.where(d > 0, n / d, 0)``, or a mask
  built from ``tf.greater(d, 0)`` multiplying it) is finite wherever its result is used; a
  clamp or ``divide_no_nan`` there only changes values near 0 (TNL302's double-where is the
  fix its gradient needs).
"""

from __future__ import annotations

import libcst as cst

from .. import ops
from ..analysis.context import Context
from ..analysis.module import Binding, Site, parent_map
from ..analysis.names import descendants

_COMPARISONS = ops.COMPARISONS


def has_tf_provenance(ctx: Context, site: Site, *nodes: cst.BaseExpression) -> bool:
    """Some operand is a TensorFlow value: a TF/Keras call inside it, or a known tensor."""
    for node in nodes:
        if ctx.val(node, site).tensor:
            return True
        if any(isinstance(n, cst.Call) and ctx.op(n) is not None for n in descendants(node)):
            return True
    return False


def guarded(ctx: Context, site: Site, node: cst.BaseExpression, num: cst.BaseExpression,
            den: cst.BaseExpression) -> bool:  # fmt: skip
    """``node`` (``num`` divided by ``den``) sits under a where, or is multiplied by a mask
    (in its numerator or around it), that tests ``den``."""
    names = _names(den)
    text = _text(ctx, den)
    if _tests(ctx, site, num, text, names):
        return True
    parents = parent_map(site.statement)
    child: cst.CSTNode = node
    parent = parents.get(id(node))
    while parent is not None:
        if isinstance(parent, cst.Call) and ctx.op(parent) == "where" and parent.args:
            cond = parent.args[0].value
            if child is not cond and _tests(ctx, site, cond, text, names):
                return True
        if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Multiply):
            other = parent.right if child is parent.left else parent.left
            if _tests(ctx, site, other, text, names):
                return True
        child, parent = parent, parents.get(id(parent))
    return False


def _tests(ctx: Context, site: Site, cond: cst.BaseExpression, text: str, names: set[str]) -> bool:
    """``cond`` (or what a name in it is bound to) compares the denominator."""
    for expr in _expand(ctx, site, cond):
        for n in descendants(expr):
            compared = None
            if isinstance(n, cst.Comparison):
                compared = [n.left, *(c.comparator for c in n.comparisons)]
            elif isinstance(n, cst.Call) and ctx.op(n) in _COMPARISONS | {None}:
                func = n.func.attr.value if isinstance(n.func, cst.Attribute) else None
                if func in _COMPARISONS:
                    compared = [a.value for a in n.args]
            if compared and any(_mentions(ctx, c, text, names) for c in compared):
                return True
    return False


def _expand(ctx: Context, site: Site, cond: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The condition and, one level deep, the values of the names it reads (``mask``)."""
    out = [cond]
    for n in descendants(cond):
        if isinstance(n, cst.Name):
            found = ctx.ev.lookup(n.value, site.scope, site.order)
            if isinstance(found, Binding) and found.value is not None:
                out.append(found.value)
    return out


def _mentions(ctx: Context, expr: cst.BaseExpression, text: str, names: set[str]) -> bool:
    return _text(ctx, expr) == text or bool(names and names <= _names(expr))


def _names(node: cst.CSTNode) -> set[str]:
    return {n.value for n in descendants(node) if isinstance(n, cst.Name)}


def _text(ctx: Context, node: cst.CSTNode) -> str:
    return "".join(ctx.code(node).split()).strip("()")


def result_tested(ctx: Context, site: Site) -> bool:
    """The statement assigns a name that the code later compares (``tf.greater(w_norm, 0)``,
    ``d > 0``): that test is a guard on exact zeros, and clamping the value defeats it."""
    stmt = site.statement
    if not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1:
        return False
    target = stmt.targets[0].target
    if not isinstance(target, cst.Name):
        return False
    scope_node = site.scope.node
    for n in descendants(scope_node):
        compared: list[cst.BaseExpression] = []
        if isinstance(n, cst.Comparison):
            compared = [n.left, *(c.comparator for c in n.comparisons)]
        elif isinstance(n, cst.Call) and isinstance(n.func, (cst.Attribute, cst.Name)):
            func = n.func.attr.value if isinstance(n.func, cst.Attribute) else n.func.value
            if func in _COMPARISONS:
                compared = [a.value for a in n.args]
        if any(isinstance(c, cst.Name) and c.value == target.value for c in compared):
            return True
    return False
