"""Conditions the evaluator reads from comparisons: ``x > 0`` (or ``tf.less(x, k)``, followed back
through a few names), negated in the other branch, and the range of each branch of a
``tf.where`` (:func:`where_branches`) restricted by it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Protocol

import libcst as cst

from .. import ops
from .module import Binding, Scope, call_arg
from .values import INF, Val


class ValueReader(Protocol):
    """What a condition reads of the evaluator (:class:`.provenance.Evaluator` is one)."""

    def value(self, node: cst.BaseExpression, scope: Scope, order: int) -> Val: ...

    def op(self, call: cst.Call) -> str | None: ...

    def lookup(self, name: str, scope: Scope, order: int) -> Binding | cst.Param | None: ...


_CMP_OPS = {
    cst.LessThan: "<",
    cst.LessThanEqual: "<=",
    cst.GreaterThan: ">",
    cst.GreaterThanEqual: ">=",
}
_NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}
# the ordering comparison ops (`tf.math.less(x, k)`) by the operator they compute
_CMP_CALLS = {n: o for n, o in ops.OPERATORS.items() if o in _NEGATED}
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
MAX_CONDITION_HOPS = 3  # names followed back to the comparison (`small = df <= 1`)


@dataclass(frozen=True)
class Condition:
    """``subject op bound`` holds where the where selects its first branch."""

    subject: cst.BaseExpression
    op: str
    bound: cst.BaseExpression


def _negated(c: Condition | None) -> Condition | None:
    return Condition(c.subject, _NEGATED[c.op], c.bound) if c is not None else None


def comparison(
    ev: ValueReader, node: cst.BaseExpression, scope, order, hops: int = 0
) -> Condition | None:
    """The single comparison a where condition is (`x <= k`, `tf.math.greater(x, k)`, `~(...)`,
    `tf.logical_not(...)`, a name bound to one), or None."""
    if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        target = node.comparisons[0]
        op = _CMP_OPS.get(type(target.operator))
        return Condition(node.left, op, target.comparator) if op else None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.BitInvert, cst.Not)):
        return _negated(comparison(ev, node.expression, scope, order, hops))
    if isinstance(node, cst.Call):
        op = ev.op(node)
        first, second = call_arg(node, 0, "x"), call_arg(node, 1, "y")
        if op == "logical_not" and first is not None:
            return _negated(comparison(ev, first, scope, order, hops))
        if op in _CMP_CALLS and first is not None and second is not None:
            return Condition(first, _CMP_CALLS[op], second)
    if isinstance(node, cst.Name) and hops < MAX_CONDITION_HOPS:
        found = ev.lookup(node.value, scope, order)
        value = getattr(found, "value", None)
        if isinstance(value, cst.BaseExpression) and getattr(found, "index", None) is None:
            return comparison(ev, value, found.scope, found.at, hops + 1)  # type: ignore[union-attr]
    return None


def _about(c: Condition, branch: cst.BaseExpression) -> Condition | None:
    """The condition as a bound on ``branch`` when it compares that very expression."""
    if c.subject.deep_equals(branch):
        return c
    if c.bound.deep_equals(branch):
        return Condition(c.bound, _FLIPPED[c.op], c.subject)
    return None


def restricted(v: Val, op: str, k: Val) -> Val:
    """``v`` where ``v op k`` holds: a strict bound moves one float64 step inward, which is no
    more than one step of any narrower dtype, so the refined bound stays sound in every dtype."""
    lo, hi = v.lo, v.hi
    if op in ("<", "<=") and k.hi < INF:
        hi = min(hi, math.nextafter(k.hi, -INF) if op == "<" else k.hi)
    elif op in (">", ">=") and k.lo > -INF:
        lo = max(lo, math.nextafter(k.lo, INF) if op == ">" else k.lo)
    return (
        v
        if (lo, hi) == (v.lo, v.hi)
        else replace(v, lo=lo, hi=hi, zero=None if lo > 0 or hi < 0 else v.zero)
    )


def where_branches(
    ev: ValueReader, node: cst.Call, scope, order
) -> tuple[Val, Val, list[str]] | None:
    """The where's two branch values, each restricted by the condition under which it is chosen
    (`tf.where(df <= 1, 2., df)`: the else branch is df > 1), and a sentence per refinement."""
    c_node, x_node, y_node = (
        call_arg(node, 0, "condition"),
        call_arg(node, 1, "x", "x1"),
        call_arg(node, 2, "y", "x2"),
    )
    if c_node is None or x_node is None or y_node is None:
        return None
    x, y = ev.value(x_node, scope, order), ev.value(y_node, scope, order)
    cond = comparison(ev, c_node, scope, order)
    notes = []
    for i, (branch, c) in enumerate(((x_node, cond), (y_node, _negated(cond)))):
        on = _about(c, branch) if c is not None else None
        if on is None:
            continue
        k = ev.value(on.bound, scope, order)
        before = x if i == 0 else y
        after = restricted(before, on.op, k)
        if after is before:
            continue
        x, y = (after, y) if i == 0 else (x, after)
        which = "then" if i == 0 else "else"
        shown = _show(k.lo if on.op in (">", ">=") else k.hi)
        notes.append(f"`{_code(branch)}` {on.op} {shown} on the {which} branch")
    return x, y, notes


def _show(v: float) -> str:
    return f"{v:g}"


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)
