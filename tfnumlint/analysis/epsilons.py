"""Epsilons as the rules and the verifier both read them: a small positive constant added to a
value (``x + 1e-7``, ``1e-8 + x``, ``tf.add(x, EPS)``, a +/- chain), split off its remainder.
"""

from __future__ import annotations

import libcst as cst

from .context import Context
from .module import Site

SMALL_EPS = 1e-3  # a positive constant at most this large, added to a value, is an "epsilon"


def eps_value(ctx: Context, node: cst.BaseExpression, site: Site) -> float | None:
    """The value of ``node`` when it is a small positive constant (an epsilon)."""
    v = ctx.val(node, site)
    if v.const is not None and 0 < v.const <= SMALL_EPS:
        return v.const
    return None


def additive_terms(node: cst.BaseExpression) -> list[tuple[cst.BaseExpression, int]]:
    """Flatten ``a + b - c`` into [(a, +1), (b, +1), (c, -1)]."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract)):
        left = additive_terms(node.left)
        sign = 1 if isinstance(node.operator, cst.Add) else -1
        right = [(n, s * sign) for n, s in additive_terms(node.right)]
        return left + right
    return [(node, 1)]


def split_eps(
    ctx: Context, node: cst.BaseExpression, site: Site
) -> tuple[cst.BaseExpression, float | None]:
    """Split ``x + eps`` (in any order, in a longer +/- chain too) into (x, eps).

    Returns ``(node, None)`` when there is no epsilon term.  The remainder is rebuilt as
    a synthetic expression so that provenance can be evaluated on it.
    """
    terms = additive_terms(node)
    if len(terms) < 2:
        call_eps = _tf_add_eps(ctx, node, site)
        return call_eps if call_eps else (node, None)
    eps = None
    rest: list[tuple[cst.BaseExpression, int]] = []
    for term, sign in terms:
        value = eps_value(ctx, term, site) if sign > 0 else None
        if value is not None and eps is None:
            eps = value
        else:
            rest.append((term, sign))
    if eps is None or not rest:
        return node, None
    return rebuild(rest), eps


def _tf_add_eps(ctx: Context, node, site):
    if isinstance(node, cst.Call) and ctx.op(node) == "add" and len(node.args) == 2:
        a, b = node.args[0].value, node.args[1].value
        if eps_value(ctx, b, site) is not None:
            return a, eps_value(ctx, b, site)
        if eps_value(ctx, a, site) is not None:
            return b, eps_value(ctx, a, site)
    return None


def rebuild(terms: list[tuple[cst.BaseExpression, int]]) -> cst.BaseExpression:
    first, sign = terms[0]
    expr: cst.BaseExpression = first if sign > 0 else cst.UnaryOperation(cst.Minus(), first)
    for term, s in terms[1:]:
        expr = cst.BinaryOperation(expr, cst.Add() if s > 0 else cst.Subtract(), term)
    return expr


def first_arg(call: cst.Call, *keywords: str) -> cst.BaseExpression | None:
    for a in call.args:
        if a.keyword is not None and a.keyword.value in keywords:
            return a.value
    for a in call.args:
        if a.keyword is None and not a.star:
            return a.value
    return None
