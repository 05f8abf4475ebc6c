"""Layers a model builds in a loop over values the code fixes (static side, no TF import).

``for units in [512, 256, 128]: h = Dense(units, activation="relu")(h)`` and ``for _ in
range(3): model.add(Dense(64))`` make one layer per pass, each with the loop's target bound to
that pass's value, as Python runs them.  A loop over anything else (a list built at run time, a
``zip``), a loop inside another, or a layer statement under an ``if`` in the body is not read:
the stack then depends on the run.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from ..context import Context
from ..module import Scope, contains
from ..names import descendants, dotted_name

Number = Callable[[cst.BaseExpression | None, Scope, int], float | None]
MAX_PASSES = 32  # a deeper stack is not unrolled


def enclosing_for(scope: Scope, node: cst.CSTNode) -> cst.For | None:
    """The one ``for`` loop of ``scope`` whose body holds ``node`` as a statement of its own
    (not under an ``if`` or a nested loop); None when there is none, or more than one."""
    loops = [n for n in descendants(scope.node) if isinstance(n, cst.For) and contains(n, node)]
    if len(loops) != 1 or not isinstance(loops[0].body, cst.IndentedBlock):
        return None
    loop = loops[0]
    direct = any(
        isinstance(s, cst.SimpleStatementLine) and contains(s, node) for s in loop.body.body
    )
    return loop if direct and not loop.orelse else None


def pass_values(
    ctx: Context, loop: cst.For, number: Number, scope: Scope, order: int
) -> list[float] | None:
    """The values the loop's target takes, in order: the items of a literal list or tuple of
    numbers, or ``range(...)`` of numbers the code fixes; None for anything else."""
    if not isinstance(loop.target, cst.Name):
        return None
    it = loop.iter
    if isinstance(it, (cst.List, cst.Tuple)):
        items = [number(e.value, scope, order) for e in it.elements]
        values = None if None in items else [float(v) for v in items if v is not None]
    elif isinstance(it, cst.Call) and dotted_name(it.func) == "range" and 1 <= len(it.args) <= 3:
        ends = [number(a.value, scope, order) for a in it.args]
        if None in ends or any(e is not None and e != int(e) for e in ends):
            return None
        values = [float(v) for v in range(*(int(e) for e in ends if e is not None))]
    else:
        return None
    return values if values is not None and 0 < len(values) <= MAX_PASSES else None


def bound(number: Number, target: str, value: float) -> Number:
    """``number`` with the loop's target read as this pass's value."""

    def read(node: cst.BaseExpression | None, scope: Scope, order: int) -> float | None:
        if isinstance(node, cst.Name) and node.value == target:
            return value
        return number(node, scope, order)

    return read


def unrolled_passes(
    ctx: Context,
    loop: cst.For,
    one_pass: list[cst.Call],
    number: Number,
    scope: Scope,
    order: int,
) -> list[tuple[cst.Call, Number]] | None:
    """The layers one pass of ``loop`` makes (in program order), once per pass, each reading
    its pass's value.  None when the loop's values are not fixed by the code."""
    values = pass_values(ctx, loop, number, scope, order)
    if values is None:
        return None
    assert isinstance(loop.target, cst.Name)
    target = loop.target.value
    return [(call, bound(number, target, v)) for v in values for call in one_pass]


def directly_in(scope: Scope, loop: cst.For) -> bool:
    """The loop is a statement of ``scope``'s own block (not under an ``if`` or a ``with``)."""
    node = scope.node
    body = node.body if isinstance(node, cst.Module) else getattr(node, "body", None)
    lines = body if isinstance(body, (list, tuple)) else getattr(body, "body", ())
    return any(line is loop for line in lines)
