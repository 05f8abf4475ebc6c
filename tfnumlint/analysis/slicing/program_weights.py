"""A Keras layer's own weights, read for the training rung (static side, no TF import).

``self.w = self.add_weight(shape=..., initializer=...)`` in a layer class's ``build(self,
input_shape)`` or ``__init__``: a weight of that shape, starting as the initializer makes it.
Keras calls ``build`` with the shape of what the layer is first called on, which the program
slice knows where it follows the layer (``[None, width]``: rows of the batch), so that
``input_shape[-1:]`` or ``(input_shape[-1], self.units)`` read as numbers.  An initializer the
rung cannot rebuild is assumed glorot-uniform, and the verdict says so; a shape it cannot read,
a weight that is not trained (``trainable=False``) or one with its own regularizer or constraint
(which change what training does) leaves the weight unread, and the slice cut.
"""

from __future__ import annotations

import libcst as cst

from ..context import Context
from ..module import Binding, Scope
from .program_inits import Number, keras_initializer


def added_weight(ctx: Context, found: Binding) -> cst.Call | None:
    """The ``self.add_weight(...)`` call an attribute's assignment makes, or None."""
    value = found.value
    if found.index is not None or not isinstance(value, cst.Call):
        return None
    func = value.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "add_weight"):
        return None
    own = isinstance(func.value, cst.Name) and func.value.value == found.scope.self_name
    return value if own else None


def _args(call: cst.Call) -> dict[str, cst.BaseExpression] | None:
    """``add_weight``'s arguments by name.  Keras 3 takes ``(shape, initializer, ...)``
    positionally, Keras 2 ``(name, shape, dtype, initializer, ...)``: a first positional string
    is Keras 2's name.  Other positions are not read (None)."""
    positional = [a.value for a in call.args if a.keyword is None]
    if any(a.star for a in call.args):
        return None
    order: tuple[str, ...] = ("shape", "initializer")
    if positional and isinstance(positional[0], cst.SimpleString):
        order = ("name", "shape", "dtype", "initializer")
    if len(positional) > len(order):
        return None
    named = dict(zip(order, positional, strict=False))
    for a in call.args:
        if a.keyword is not None:
            named[a.keyword.value] = a.value
    return named


def layer_weight(
    ctx: Context,
    call: cst.Call,
    found: Binding,
    number: Number,
    input_shape: list | None,
) -> tuple[dict, bool] | None:
    """The weight ``self.add_weight(...)`` makes: its spec (``{"init", "shape", ...}``, a
    width only the data fixes as ``fan_in_from``) and whether its initializer was assumed;
    None when the slice cannot make it."""
    args = _args(call)
    if args is None or any(k in args for k in ("regularizer", "constraint")):
        return None
    trainable = args.get("trainable")
    if trainable is not None and not (
        isinstance(trainable, cst.Name) and trainable.value == "True"
    ):
        return None
    scope, order = found.scope, found.at
    built = _built(scope, input_shape)
    shape = _dims(ctx, args.get("shape"), scope, order, number, built, 0)
    if shape is None:
        return None
    spec: dict = {}
    if shape and isinstance(shape[0], str):  # the width of the data: known when it is drawn
        spec["fan_in_from"] = shape[0]
        shape = [None, *shape[1:]]
    if any(not isinstance(d, int) for d in shape[1:]) or (shape[:1] == [None] and not spec):
        return None
    init = keras_initializer(ctx, args.get("initializer"), scope, order, number)
    return {**(init or {"init": "unknown"}), **spec, "shape": shape}, init is None


def _built(scope: Scope, input_shape: list | None) -> tuple[str, list] | None:
    """``build``'s shape parameter and what it holds, when ``scope`` is a ``build`` method
    and the slice knows the shape of what the layer is called on."""
    fn = scope.node
    if input_shape is None or not isinstance(fn, cst.FunctionDef) or fn.name.value != "build":
        return None
    params = fn.params.params
    return (params[1].name.value, input_shape) if len(params) == 2 else None


def _dims(
    ctx: Context,
    node: cst.BaseExpression | None,
    scope: Scope,
    order: int,
    number: Number,
    built: tuple[str, list] | None,
    hops: int,
) -> list | None:
    """A weight's shape: a list or tuple of sizes, a slice of ``build``'s input shape, or one
    size; a local name is read through its one assignment."""
    if node is None or hops > 4:
        return None
    if isinstance(node, (cst.List, cst.Tuple)):
        out = [_dim(ctx, e.value, scope, order, number, built, hops) for e in node.elements]
        return None if any(d is None for d in out) else out
    whole = _input_shape(ctx, node, scope, order, built, hops)
    if whole is not None:
        return whole
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        of = _input_shape(ctx, node.value, scope, order, built, hops)
        part = node.slice[0].slice
        if of is not None and isinstance(part, cst.Slice) and part.step is None:
            lo, hi = _int(part.lower), _int(part.upper)
            if (part.lower is None or lo is not None) and (part.upper is None or hi is not None):
                return of[lo:hi]
            return None
    if isinstance(node, cst.Name) and (bound := _local(ctx, node, scope, order)) is not None:
        return _dims(ctx, *bound, number, built, hops + 1)
    one = _dim(ctx, node, scope, order, number, built, hops)
    return [one] if one is not None else None


def _dim(
    ctx: Context,
    node: cst.BaseExpression,
    scope: Scope,
    order: int,
    number: Number,
    built: tuple[str, list] | None,
    hops: int,
) -> int | str | None:
    """One size: a number the code fixes, or an entry of ``build``'s input shape
    (``input_shape[-1]``; a str: the width of the data it is drawn as)."""
    if hops > 4:
        return None
    if isinstance(node, cst.Call) and len(node.args) == 1 and ctx.code(node.func) == "int":
        return _dim(ctx, node.args[0].value, scope, order, number, built, hops + 1)  # int(n)
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        of = _input_shape(ctx, node.value, scope, order, built, hops)
        at = node.slice[0].slice
        i = _int(at.value) if isinstance(at, cst.Index) else None
        if of is not None:
            return of[i] if i is not None and -len(of) <= i < len(of) else None
    if isinstance(node, cst.Name) and (bound := _local(ctx, node, scope, order)) is not None:
        return _dim(ctx, *bound, number, built, hops + 1)
    c = number(node, scope, order)
    return int(c) if c is not None and float(c).is_integer() and c > 0 else None


def _input_shape(
    ctx: Context,
    node: cst.BaseExpression,
    scope: Scope,
    order: int,
    built: tuple[str, list] | None,
    hops: int,
) -> list | None:
    """``build``'s shape parameter (or a local name bound to it): the input shape."""
    if built is None or not isinstance(node, cst.Name) or hops > 4:
        return None
    found = ctx.ev.lookup(node.value, scope, order)
    if isinstance(found, cst.Param) and node.value == built[0]:
        return list(built[1])
    bound = _local(ctx, node, scope, order)
    if bound is not None:
        return _input_shape(ctx, *bound, built, hops + 1)
    return None


def _local(
    ctx: Context, node: cst.Name, scope: Scope, order: int
) -> tuple[cst.BaseExpression, Scope, int] | None:
    """The value, scope and order of the one assignment of a local name of the method
    (``d = input_shape[-1]``)."""
    found = ctx.ev.lookup(node.value, scope, order)
    if not isinstance(found, Binding) or found.scope is not scope or found.index is not None:
        return None
    return (found.value, found.scope, found.at) if found.value is not None else None


def _int(node: cst.BaseExpression | None) -> int | None:
    """A literal int, negative ones too."""
    if isinstance(node, cst.Integer):
        return int(node.value)
    if (
        isinstance(node, cst.UnaryOperation)
        and isinstance(node.operator, cst.Minus)
        and isinstance(node.expression, cst.Integer)
    ):
        return -int(node.expression.value)
    return None
