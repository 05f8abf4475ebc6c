"""``tf.einsum`` of two operands in the training rung's slice, and the width of what an
attention step joins (static side, no TF import).

An attention step is often written with einsum: ``tf.einsum("bld,bd->bl", keys, q)`` scores
each step of a sequence, ``tf.einsum("bl,bld->bd", weights, keys)`` pools it.  The rung runs
the program's own tensors, batch and sequence axes included, so the equation is kept as it is
written (the rung-only ``einsum_pair`` op); a finding's probe, whose values are per-point rows,
still takes an einsum as one input.  Only a literal equation of two operands is read (no
ellipsis, no implicit output).

``head(tf.concat([pooled, c], axis=1))``: a Dense layer's kernel is as wide as what it reads,
here the pooled keys' width plus the data's (its recipe's shape), when each part's rank says
that the joined axis is the last one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import libcst as cst

from ..context import Context
from ..module import Scope
from ..recipe_shapes import recipe_shape


def einsum_call(
    ctx: Context,
    call: cst.Call,
    scope: Scope,
    order: int,
    depth: int,
    tree: Callable[[cst.BaseExpression, Scope, int, int], dict],
) -> dict | None:
    """The ``einsum_pair`` node of ``tf.einsum(equation, a, b)``, or None."""
    if ctx.op(call) != "einsum" or len(call.args) != 3 or any(a.keyword for a in call.args):
        return None
    if any(a.star for a in call.args):
        return None
    spec = call.args[0].value
    equation = spec.evaluated_value if isinstance(spec, cst.SimpleString) else None
    if not isinstance(equation, str) or _terms(equation) is None:
        return None
    a = tree(call.args[1].value, scope, order, depth + 1)
    b = tree(call.args[2].value, scope, order, depth + 1)
    return {"k": "call", "op": "einsum_pair", "args": [{"k": "str", "v": equation}, a, b], "kw": {}}


def _terms(equation: str) -> tuple[str, str, str] | None:
    """``("bld", "bd", "bl")`` of ``"bld,bd->bl"``; None for another form."""
    text = equation.replace(" ", "")
    inputs, arrow, out = text.partition("->")
    parts = inputs.split(",")
    if not arrow or len(parts) != 2 or "." in text:
        return None
    if not all(p.isalpha() for p in (*parts, out) if p) or not out:
        return None
    return parts[0], parts[1], out


def einsum_width(tree: dict, width: Callable[[Any], int | str | None]) -> int | str | None:
    """The last dimension of an ``einsum_pair`` node: the width of the operand whose last axis
    is the output's last axis (``"bl,bld->bd"``: the second operand's); None otherwise."""
    args = tree.get("args") or []
    terms = _terms(str(args[0].get("v"))) if len(args) == 3 else None
    if terms is None:
        return None
    first, second, out = terms
    for term, operand in ((first, args[1]), (second, args[2])):
        if term.endswith(out[-1]):
            return width(operand)
    return None


def _rank(tree: Any, data: dict[str, dict]) -> int | None:
    """The rank of an einsum's output or of the program's data (every feed's recipe)."""
    if not isinstance(tree, dict):
        return None
    if tree.get("k") == "call" and tree.get("op") == "einsum_pair":
        terms = _terms(str((tree.get("args") or [{}])[0].get("v")))
        return len(terms[2]) if terms is not None else None
    shape = data_shape(data.get(str(tree.get("name")))) if tree.get("k") == "input" else None
    return len(shape) if shape is not None else None


def data_shape(entry: dict | None) -> tuple[int, ...] | None:
    """The shape every feed of a data entry has (from its recipe), or None."""
    feeds = (entry or {}).get("feeds") or []
    shapes = {recipe_shape(f["data"]) if f.get("data") else None for f in feeds}
    if len(shapes) != 1:
        return None
    shape = shapes.pop()
    return shape if shape else None


def concat_width(
    tree: dict, width: Callable[[Any], int | str | None], data: dict[str, dict]
) -> int | None:
    """The width of ``concat(parts, axis)`` joined along the last axis: the parts' widths
    summed (a data part's from its recipe's shape); None when one is unknown."""
    args = tree.get("args") or []
    axis = tree.get("kw", {}).get("axis") if len(args) < 2 else args[1]
    parts = args[0].get("items") if args and args[0].get("k") == "tuple" else None
    at = axis.get("v") if isinstance(axis, dict) and axis.get("k") == "const" else None
    if not parts or not isinstance(at, (int, float)):
        return None
    if at != -1 and any(_rank(p, data) != int(at) + 1 for p in parts):
        return None  # the joined axis is not known to be the last
    total = 0
    for part in parts:
        got = width(part)
        if isinstance(got, str):
            shape = data_shape(data.get(got))
            got = shape[-1] if shape else None
        if not isinstance(got, int):
            return None
        total += got
    return total
