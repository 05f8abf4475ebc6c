"""Reading the analysed module for a rewrite: where a value came from, and whether it may move.

A rewrite often replaces an expression by one built from the operands of an earlier statement
(``log(p)`` with ``p = sigmoid(z)`` becomes ``log_sigmoid(z)``).  These helpers follow names to
their producers (:func:`origin`, :func:`trace_prob`) and check that an operand means the same
at the rewritten site (:func:`movable`) and can be evaluated twice or dropped (:func:`pure`).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from .. import ops
from ..analysis.context import Context
from ..analysis.epsilons import first_arg
from ..analysis.module import Binding, Scope, Site
from ..analysis.slicing.signatures import bind
from .ir import Num, Src

# the clamp epsilon per dtype: representable, and far below the values it protects
EPS = {"float16": 1e-4, "float32": 1e-7, "float64": 1e-7}
EPS_TEXT = {1e-4: "1e-4", 1e-7: "1e-7"}

# a name followed to its producer through at most this many assignments
_MAX_HOPS = 8


def eps_num(dtype: str) -> Num | None:
    """The clamp epsilon for ``dtype`` as a literal, or None for a dtype without one."""
    e = EPS.get(dtype)
    return None if e is None else Num(EPS_TEXT[e], e)


def here(node: cst.BaseExpression, site: Site) -> Src:
    """``node`` evaluated at the hit's own site."""
    return Src(node, site.scope, site.order)


def op_of(ctx: Context, node: cst.CSTNode) -> str | None:
    """The canonical op of a call node, None for anything else."""
    return ctx.op(node) if isinstance(node, cst.Call) else None


def log_arg(node: cst.CSTNode) -> cst.BaseExpression | None:
    """The argument of a ``log`` call (None when ``node`` is not a call)."""
    return first_arg(node, "x", "input") if isinstance(node, cst.Call) else None


def code_key(ctx: Context, node: cst.CSTNode) -> str:
    """Source text without spaces or outer parentheses: equal keys, the same expression."""
    return ctx.code(node).strip().strip("()").replace(" ", "")


Origin = tuple[cst.BaseExpression, Scope, int, tuple[str, Scope] | None]


def origin(ctx: Context, node: cst.BaseExpression, scope: Scope, order: int) -> Origin:
    """Follow names to the call that produced ``node``: (node, scope, order, the first name
    followed with its scope, or None)."""
    name = None
    depth = 0
    while depth < _MAX_HOPS and isinstance(node, cst.Name):
        found = ctx.ev.lookup(node.value, scope, order)
        if not isinstance(found, Binding) or found.value is None or found.index is not None:
            break
        name = name or (node.value, scope)
        node, scope, order = found.value, found.scope, found.at
        depth += 1
    return node, scope, order, name


@dataclass
class Prob:
    """A probability traced back to its activation: sigmoid(z), 1 - sigmoid(z), softmax(z)."""

    kind: str  # sigmoid | softmax
    complement: bool
    logits: Src
    axis: Src | None
    folds: list[tuple[str, Scope]]


def trace_prob(ctx: Context, node: cst.BaseExpression, site: Site) -> Prob | None:
    """``node`` as sigmoid(z) / 1 - sigmoid(z) / softmax(z) with z reachable in the file."""
    folds: list[tuple[str, Scope]] = []
    complement = False
    cur, scope, order, name = origin(ctx, node, site.scope, site.order)
    if name:
        folds.append(name)
    if (
        isinstance(cur, cst.BinaryOperation)
        and isinstance(cur.operator, cst.Subtract)
        and ctx.ev.value(cur.left, scope, order).const == 1.0
    ):
        complement = True
        cur, scope, order, name = origin(ctx, cur.right, scope, order)
        if name:
            folds.append(name)
    if not isinstance(cur, cst.Call):
        return None
    op = ctx.op(cur)
    if op not in ops.PROBABILITY or (complement and op == "softmax"):
        return None
    z = first_arg(cur, "x", "logits", "features")
    if z is None or any(a.star for a in cur.args):
        return None
    axis = bind(op, cur).params.get("axis") if op == "softmax" else None
    return Prob(
        op,
        complement,
        Src(z, scope, order),
        Src(axis, scope, order) if axis is not None else None,
        folds,
    )


def movable(ctx: Context, src: Src, site: Site) -> bool:
    """``src`` means the same at ``site``: every name resolves to the same binding there, and it
    calls nothing but TF ops (no duplicated model call)."""
    if src.scope is site.scope and src.order == site.order:
        return True
    ok = True

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            nonlocal ok
            a = ctx.ev.lookup(n.value, src.scope, src.order)
            b = ctx.ev.lookup(n.value, site.scope, site.order)
            if a is not b:
                ok = False

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            nonlocal ok
            if ctx.info.imports.resolve(n) is None and not _self_attr(n):
                ok = False
            return True

        def visit_Call(self, n: cst.Call) -> None:
            nonlocal ok
            if ctx.op(n) is None:
                ok = False

    src.node.visit(V())
    return ok and (
        src.scope is site.scope or _enclosing_function(src.scope) is _enclosing_function(site.scope)
    )


def _self_attr(n: cst.Attribute) -> bool:
    return isinstance(n.value, cst.Name) and n.value.value == "self"


def _enclosing_function(scope: Scope) -> Scope | None:
    s: Scope | None = scope
    while s is not None and s.kind == "class":
        s = s.parent
    return s


def pure(ctx: Context, node: cst.CSTNode) -> bool:
    """Only TF/Keras calls, no walrus, no lambda: safe to evaluate twice or to drop."""
    ok = True

    class V(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            nonlocal ok
            if ctx.op(n) is None:
                ok = False

        def visit_NamedExpr(self, n: cst.NamedExpr) -> None:
            nonlocal ok
            ok = False

        def visit_Lambda(self, n: cst.Lambda) -> None:
            nonlocal ok
            ok = False

    node.visit(V())
    return ok


def reduce_args(
    ctx: Context, call: cst.Call
) -> tuple[cst.BaseExpression | None, cst.BaseExpression | None] | None:
    """(axis, keepdims) of a reduction in any spelling (``reduction_indices=``, ``keep_dims=``,
    positional, Keras backend), or None when the call has an argument we do not model."""
    op = ctx.op(call)
    if op is None:
        return None
    bound = bind(op, call)
    if bound.unknown:
        return None
    return bound.params.get("axis"), bound.params.get("keepdims")


def reduce_kw(ctx: Context, call: cst.Call, scope: Scope, order: int) -> list[tuple[str, Src]]:
    """A reduction's ``axis=`` and ``keepdims=``, as IR for the fused op that replaces it."""
    kw = []
    axis, keepdims = reduce_args(ctx, call) or (None, None)
    if axis is not None:
        kw.append(("axis", Src(axis, scope, order)))
    if keepdims is not None:
        kw.append(("keepdims", Src(keepdims, scope, order)))
    return kw
