"""A reparameterisation's noise, read for the training rung (static side, no TF import).

``tf.random.normal(tf.shape(z), mean, stddev)`` is a fresh draw shaped like ``z`` at each
step, as the program draws it.  So is a shape written out from ``z``'s own:
``(tf.shape(z)[0], tf.shape(z)[1])`` (Keras's VAE example, through ``batch = tf.shape(z)[0]``),
or ``[tf.shape(z)[0], 16]``: as many rows as ``z``, and 16 entries each (a GAN's noise).
Other draws (a literal shape with no rows of the data's, a uniform or truncated draw) are not
followed.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from ..context import Context
from ..module import Binding, Scope
from .program_inits import _number

Tree = Callable[[cst.BaseExpression, Scope, int, int], dict]


def normal_draw(
    ctx: Context, call: cst.Call, scope: Scope, order: int, depth: int, tree: Tree
) -> dict | None:
    """The draw as a ``normal_draw(like, mean, stddev[, width])`` tree, or None."""
    resolved = ctx.info.imports.resolve(call.func) or ""
    if not resolved.endswith(("random.normal", "random_normal")):
        return None
    shape = ctx.arg(call, 0, "shape")
    like = _shape_of(ctx, shape, scope, order) if shape is not None else None
    if like is None:
        return None
    moments = []
    for index, name, default in ((1, "mean", 0.0), (2, "stddev", 1.0)):
        node = ctx.arg(call, index, name)
        v = default if node is None else _number(ctx, node, scope, order)
        if v is None:
            return None
        moments.append({"k": "const", "v": float(v)})
    value, width = like
    args = [tree(value, scope, order, depth + 1), *moments]
    if width is not None:
        args.append({"k": "const", "v": float(width)})
    return {"k": "call", "op": "normal_draw", "args": args, "kw": {}}


def _shape_of(
    ctx: Context, shape: cst.BaseExpression, scope: Scope, order: int
) -> tuple[cst.BaseExpression, int | None] | None:
    """(the value whose rows the draw has, its width when it is not that value's own):
    ``tf.shape(z)`` is ``(z, None)``; ``(tf.shape(z)[0], tf.shape(z)[1])`` of a 2-D ``z`` too;
    ``[tf.shape(z)[0], 16]`` is ``(z, 16)``."""
    whole = _shape_call(ctx, shape)
    if whole is not None:
        return whole, None
    if not isinstance(shape, (cst.Tuple, cst.List)) or len(shape.elements) != 2:
        return None
    rows, cols = (_resolved(ctx, e.value, scope, order) for e in shape.elements)
    first = _axis_of(ctx, rows)
    if first is None or first[1] != 0:
        return None
    second = _axis_of(ctx, cols)
    if second is not None and second[1] == 1 and ctx.code(second[0]) == ctx.code(first[0]):
        return first[0], None  # (tf.shape(z)[0], tf.shape(z)[1]): shaped like a 2-D z
    width = _number(ctx, cols, scope, order)
    if width is None or not float(width).is_integer() or width < 1:
        return None
    return first[0], int(width)


def _shape_call(ctx: Context, node: cst.BaseExpression) -> cst.BaseExpression | None:
    """``x`` of ``tf.shape(x)``."""
    if not (isinstance(node, cst.Call) and len(node.args) == 1):
        return None
    resolved = ctx.info.imports.resolve(node.func) or ""
    return node.args[0].value if resolved.endswith(".shape") else None


def _axis_of(ctx: Context, node: cst.BaseExpression) -> tuple[cst.BaseExpression, int] | None:
    """(``x``, ``k``) of ``tf.shape(x)[k]`` with a literal ``k``."""
    if not (isinstance(node, cst.Subscript) and len(node.slice) == 1):
        return None
    index = node.slice[0].slice
    if not (isinstance(index, cst.Index) and isinstance(index.value, cst.Integer)):
        return None
    x = _shape_call(ctx, node.value)
    return (x, int(index.value.value)) if x is not None else None


def _resolved(
    ctx: Context, node: cst.BaseExpression, scope: Scope, order: int
) -> cst.BaseExpression:
    """``batch`` of ``batch = tf.shape(z)[0]``: the value it is bound to."""
    if isinstance(node, cst.Name):
        found = ctx.ev.lookup(node.value, scope, order)
        if isinstance(found, Binding) and found.index is None and found.value is not None:
            return found.value
    return node
