"""A fed value whose producer emits probabilities, read for the training rung (static side).

``soft = tf.nn.softmax(teacher.predict(lab)).numpy()``, then ``step(lab[pick], soft[pick])``:
the program's NumPy code does not give ``soft`` (a trained model's output), but the code that
produces it says what it holds: rows of softmax outputs, each in [0, 1] and summing to 1 (a
sigmoid's: entries in (0, 1)).  The run draws such a feed as its producer's output on random
inputs, not uniformly in [-1, 1], which breaks what the producing code guarantees (a negative
"probability" makes ``log(p)`` NaN on its own).

The producer is read from the code, never from names: an op of the registry's probability
family (``ops.PROBABILITY``) called on the value, or ``model.predict(x)`` / ``model(x)`` of a
Keras model whose last Dense layer's activation is one; through a conversion to an array
(``.numpy()``, ``np.asarray``, ``tf.convert_to_tensor``, a float ``astype``) and an index
that picks rows (``soft[pick]``, ``soft[i:j]``), which keeps each row whole.  A softmax over
an axis other than the last one, or an index into the row itself, is not followed: its rows
would not be the producer's.  The draw's width is the producer's last dimension when the
code gives it (a model's last Dense units), else that of the value the feed meets entry by
entry in the objective (``t * log(q)``: the program runs only when the two agree).
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from ... import ops
from ..context import Context
from ..dtypectx import dtype_word
from ..module import Binding, Scope
from .contract import walk
from .program_models import width as tree_width
from .program_sources import model_layers

MAX_STEPS = 12  # bindings, conversions and indices followed from the fed value to its producer


def probability_producer(
    ctx: Context, node: cst.BaseExpression, scope: Scope, order: int
) -> dict[str, Any] | None:
    """``{"op", "code", "of", "width", "model"}`` of the probability op that produces the fed
    value ``node`` (``of``: the array the feed picks rows of; ``width``: the producer's last
    dimension when the code gives it; ``model``: the op is a model's output activation), or
    None when no such producer is read."""
    seen: list[cst.BaseExpression] = []  # the names and indices on the way, outermost first
    reached = _to_call(ctx, node, scope, order, seen)
    if reached is None:
        return None
    call, scope, order = reached
    names = [n.value for n in seen if isinstance(n, cst.Name)]
    # an index that is not a pick of rows: an elementwise producer only
    rows_only = any(isinstance(n, cst.Subscript) and not _picks_rows(n) for n in seen)
    got = _producer(ctx, call, scope, order)
    if got is None or (rows_only and ops.REGISTRY[got["op"]].row_coupled):
        return None
    return {**got, "code": ctx.code(call), "of": names[0] if names else ctx.code(call)}


def _to_call(
    ctx: Context,
    node: cst.BaseExpression,
    scope: Scope,
    order: int,
    seen: list[cst.BaseExpression] | None = None,
) -> tuple[cst.Call, Scope, int] | None:
    """The call that makes ``node``'s value, through bindings and value-keeping conversions
    (and, with ``seen``, indices, each recorded there with the names), or None."""
    for _ in range(MAX_STEPS):
        if isinstance(node, cst.Subscript) and seen is not None:
            seen.append(node)
            node = node.value
            continue
        if isinstance(node, cst.Name):
            found = ctx.ev.lookup(node.value, scope, order)
            if not isinstance(found, Binding) or found.value is None or found.index is not None:
                return None
            if seen is not None:
                seen.append(node)
            node, scope, order = found.value, found.scope, found.at
            continue
        if not isinstance(node, cst.Call):
            return None
        inner = _converted(ctx, node)
        if inner is None:
            return node, scope, order
        node = inner
    return None


def _picks_rows(node: cst.Subscript) -> bool:
    """``a[pick]`` or ``a[i:j]``: one index, along the first axis (every row kept whole)."""
    if len(node.slice) != 1:
        return False
    index = node.slice[0].slice
    return isinstance(index, cst.Slice) or (
        isinstance(index, cst.Index)
        and not isinstance(index.value, (cst.Tuple, cst.Ellipsis))
        and not (isinstance(index.value, cst.Name) and index.value.value == "None")
    )


def _converted(ctx: Context, call: cst.Call) -> cst.BaseExpression | None:
    """The value a conversion to an array or a tensor returns unchanged: ``x.numpy()``,
    ``np.asarray(x)`` / ``np.array(x)``, ``x.astype(float32)``, a float ``tf.cast``,
    ``tf.convert_to_tensor(x)``, ``tf.identity(x)``; None for any other call."""
    func = call.func
    if isinstance(func, cst.Attribute) and not call.args and func.attr.value == "numpy":
        return func.value
    if isinstance(func, cst.Attribute) and func.attr.value == "astype" and call.args:
        return func.value if _floating(ctx, call.args[0].value) else None
    path = ctx.info.imports.path(func)
    if path.split(".")[0] == "numpy" and path.rsplit(".", 1)[-1] in ("asarray", "array"):
        first = ctx.arg(call, 0, "object", "a")
        dtype = ctx.arg(call, 1, "dtype")
        return first if dtype is None or _floating(ctx, dtype) else None
    if ctx.op(call) in ops.CONVERSIONS:
        first = ctx.arg(call, 0, "x", "value")
        dtype = ctx.arg(call, 1, "dtype")
        return first if dtype is None or _floating(ctx, dtype) else None
    return None


def _floating(ctx: Context, dtype: cst.BaseExpression) -> bool:
    """A float dtype as the code spells it (``np.float32``, ``"float32"``, ``tf.float64``,
    ``float``): the values are kept.  Its spelling decides, never a variable's name (a dtype
    held in a variable is not read: the conversion is then not followed)."""
    word = "float" if isinstance(dtype, cst.Name) and dtype.value == "float" else None
    word = word or (None if isinstance(dtype, cst.Name) else dtype_word(dtype, None))
    return bool(word) and str(word).startswith(("float", "bfloat", "half", "double"))


def _producer(ctx: Context, call: cst.Call, scope: Scope, order: int) -> dict[str, Any] | None:
    """The probability op ``call`` is, with its output's width when the code gives it."""
    op = ctx.op(call)
    if op in ops.PROBABILITY:
        if ops.REGISTRY[op].row_coupled and not _last_axis(ctx, call, scope, order):
            return None
        x = ctx.arg(call, 0, *(ops.REGISTRY[op].params or ("x",))[:1], "logits")
        return {"op": op, "width": _width(ctx, x, scope, order) if x is not None else None}
    model = _model_of(call)
    if model is None:
        return None
    layers = model_layers(ctx, model, scope, order)
    if layers and "units" in layers[-1]:
        op = _activation_op(layers[-1].get("activation"))
        return {"op": op, "width": layers[-1]["units"], "model": True} if op else None
    op = _activation_op(ctx.ev.value(model, scope, order).activation)
    return {"op": op, "width": None, "model": True} if op else None


def _model_of(call: cst.Call) -> cst.BaseExpression | None:
    """``model.predict(x)`` or ``model(x)``: the model (whichever it is: the layers read from
    its construction decide), else None."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "predict":
        return func.value
    if isinstance(func, cst.Name):
        return func
    return None


def _activation_op(activation: str | None) -> str | None:
    """The probability op a Keras ``activation=`` string names (the registry's spelling)."""
    return next(
        (op for op in sorted(ops.PROBABILITY) if ops.REGISTRY[op].keras_activation == activation),
        None,
    )


def _last_axis(ctx: Context, call: cst.Call, scope: Scope, order: int) -> bool:
    """A softmax over the last axis (the default): each row of its output sums to 1."""
    axis = ctx.arg(call, 1, "axis", "dim")
    if axis is None:
        return True
    return ctx.ev.value(axis, scope, order).const == -1


def _width(ctx: Context, node: cst.BaseExpression, scope: Scope, order: int) -> int | None:
    """The last dimension of a probability op's input, when it is a Keras model's output
    (``model.predict(x)``, ``model(x)``) whose last Dense layer's units the code gives."""
    reached = _to_call(ctx, node, scope, order)
    if reached is None:
        return None
    call, scope, order = reached
    model = _model_of(call)
    layers = model_layers(ctx, model, scope, order) if model is not None else None
    units = (layers[-1] if layers else {}).get("units")
    return int(units) if isinstance(units, int) else None


def widened(loss: Any, weights: dict[str, dict], data: dict[str, dict]) -> dict[str, dict]:
    """``data``, with each feed drawn from a probability producer whose width the code does
    not give made as wide as the value it meets entry by entry in the objective ``loss``."""
    out = dict(data)
    for name, d in data.items():
        feeds = d.get("feeds") or [{}]
        got = feeds[0].get("producer")
        if not got or got.get("width") or d.get("shape"):
            continue
        wide = _met_width(loss, name, weights, data)
        if wide is not None:
            out[name] = {**d, "feeds": [{**feeds[0], "producer": {**got, "width": wide}}]}
            out[name]["feeds"] += feeds[1:]
    return out


def _met_width(loss: Any, name: str, weights: dict[str, dict], data: dict[str, dict]) -> int | None:
    """The width of what the input ``name`` is added to, multiplied or divided by."""
    for node in walk(loss):
        if node.get("k") != "bin" or node.get("op") not in ("+", "-", "*", "/"):
            continue
        for mine, other in (("l", "r"), ("r", "l")):
            side = node.get(mine) or {}
            if side.get("k") == "input" and side.get("name") == name:
                wide = tree_width(node.get(other), weights, data)
                if isinstance(wide, int) and wide > 1:
                    return wide
    return None
