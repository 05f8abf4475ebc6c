"""TNL30x: exponentials that overflow, and tf.where branches that poison the gradient."""

from __future__ import annotations

import libcst as cst

from ..analysis.module import Site
from . import Context, Hit, rule
from .common import EXP_OVERFLOW, first_arg, fmt, split_eps, underflows

_COMPUTED = frozenset({"matmul", "diff", "linear", "neg", "arith", "mean", "reduce_mean", "reduce_sum"})


@rule("TNL301", ops={"exp"})
def exp_overflow(site: Site, ctx: Context):
    x = first_arg(site.node, "x")
    if x is None:
        return
    dtype = ctx.dtype(site)
    limit = EXP_OVERFLOW[dtype]
    v = ctx.val(x, site)
    if v.hi <= limit:
        return
    if v.kind not in _COMPUTED and not (dtype == "float16" and v.tensor):
        return
    if v.kind == "arith" and v.lo > -float("inf") and v.hi < float("inf"):
        return
    yield Hit(
        site.node,
        f"exp of {v.desc or 'an unbounded value'} overflows to inf once it passes {limit} in "
        f"{dtype}; shift by the max (x - reduce_max(x)) or use the fused log-space op",
        site,
    )


@rule("TNL301", binops=(cst.Divide,))
def manual_softmax(site: Site, ctx: Context):
    node = site.node
    n = ctx.val(node.left, site)
    d = ctx.val(node.right, site)
    if not (n.has_exp and d.exp_sum):
        return
    exp_call = node.left if isinstance(node.left, cst.Call) and ctx.op(node.left) == "exp" else node
    if not ctx.once("TNL301", exp_call):
        return
    yield Hit(
        exp_call,
        "softmax written with exp: exp(x) overflows past 88.7 in float32 (inf / inf = NaN) and "
        "the sum underflows to 0 when every x < -103 (0 / 0 = NaN); use tf.nn.softmax",
        site,
    )


_UNSAFE = frozenset({"log", "sqrt", "rsqrt", "reciprocal", "pow", "acos", "asin", "atanh", "divide"})


def _unsafe_inside(ctx: Context, node: cst.CSTNode, site: Site, depth: int = 0):
    """The first unsafe op in a where-branch whose input is not guarded."""
    if depth > 12:
        return None
    if isinstance(node, cst.Call):
        op = ctx.op(node)
        if op == "where":
            return None  # an inner where is the double-where guard
        if op in _UNSAFE:
            arg = ctx.arg(node, 1, "y") if op == "divide" else first_arg(node, "x")
            if arg is not None and not _guarded(ctx, arg, site):
                return op
        for a in node.args:
            found = _unsafe_inside(ctx, a.value, site, depth + 1)
            if found:
                return found
        return None
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, cst.Divide) and not _guarded(ctx, node.right, site):
            if ctx.val(node.right, site).const is None:
                return "divide"
        return _unsafe_inside(ctx, node.left, site, depth + 1) or _unsafe_inside(
            ctx, node.right, site, depth + 1
        )
    if isinstance(node, cst.UnaryOperation):
        return _unsafe_inside(ctx, node.expression, site, depth + 1)
    return None


def _guarded(ctx: Context, node: cst.BaseExpression, site: Site) -> bool:
    if isinstance(node, cst.Call) and ctx.op(node) == "where":
        return True
    rest, eps = split_eps(ctx, node, site)
    if eps is not None and not underflows(eps, ctx.dtype(site)):
        return True
    v = ctx.val(node, site)
    return v.guarded or v.positive or v.const is not None


@rule("TNL302", ops={"where"})
def where_nan_gradient(site: Site, ctx: Context):
    call = site.node
    for index, keyword in ((1, "x"), (2, "y")):
        branch = ctx.arg(call, index, keyword)
        if branch is None:
            continue
        op = _unsafe_inside(ctx, branch, site)
        if op:
            yield Hit(
                call,
                f"tf.where evaluates {op}(...) on every element and only then selects: where that "
                "branch is not taken its inf/NaN still reaches the gradient (0 * inf = NaN); "
                "make the input safe first with an inner tf.where (the double-where form)",
                site,
            )
            return


__all__ = ["exp_overflow", "manual_softmax", "where_nan_gradient", "fmt"]
