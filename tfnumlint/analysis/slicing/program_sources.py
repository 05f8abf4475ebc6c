"""The layers a training program's model stacks, read from its code (static side, no TF import).

The layers of a ``keras.Sequential`` or of a functional ``keras.Model`` (made in place or
returned by a module helper), each with how its weights start (``program_inits.py``).  Plain
data for the training rung (``program.py``); anything else is None, and the rung says what it
assumed.
"""

from __future__ import annotations

import math

import libcst as cst

from ... import ops
from ..context import Context
from ..in_place import block_statements
from ..module import Binding, Scope, contains
from .layer_loops import directly_in, enclosing_for, unrolled_passes
from .program_conv import conv_layer, flatten_layer, pool_layer
from .program_inits import (
    Number,
    _bias_initializer,
    _ints,
    _leaf,
    _numbers,
    keras_initializer,
)
from .program_layers import (
    batch_norm_layer,
    embedding_layer,
    pooling_layer,
    stack_layer,
)
from .program_objectives import _bound_call
from .program_recurrent import recurrent_layer


def model_layers(
    ctx: Context, node: cst.BaseExpression, scope: Scope, order: int
) -> list[dict] | None:
    """The Dense layers of the model ``node`` names: a ``keras.Sequential([...])``, or a
    functional ``keras.Model(inputs, outputs)`` whose outputs are a chain of Dense calls on a
    ``keras.Input``, made in place or returned by a module function; None for anything else."""
    built = _bound_call(ctx, node, scope, order)
    for _ in range(3):  # model = build(): the helper's returned model
        if built is None:
            return None
        name = ctx.info.imports.resolve(built.func) or ""
        if name.endswith("Sequential") or name.endswith("Model"):
            break
        built = _returned_call(ctx, built)
    if built is None:
        return None
    name = ctx.info.imports.resolve(built.func) or ""
    fn_scope = _scope_of(ctx, built) or scope
    if name.endswith("Sequential") and ctx.arg(built, 0, "layers") is None:
        added = added_layers(ctx, node, scope, order)
        return sequential_layers(ctx, built, fn_scope, order, given=added) if added else None
    if name.endswith("Sequential"):
        return sequential_layers(ctx, built, fn_scope, order)
    if name.endswith("Model"):
        return functional_layers(ctx, built, fn_scope)
    return None


def lone_layer(
    ctx: Context, node: cst.BaseExpression, scope: Scope, order: int
) -> list[dict] | None:
    """The Dense or Embedding layer ``node`` names when it is one made in place (``layer1 =
    keras.layers.Dense(32, activation="tanh")``, then called on a value: ``layer1(xb)``), as
    a stack of that one layer; None for anything else."""
    built = _bound_call(ctx, node, scope, order)
    if built is None:
        return None
    found = ctx.ev.lookup(node.value, scope, order) if isinstance(node, cst.Name) else None
    at = found.at if isinstance(found, Binding) else order
    made = _scope_of(ctx, built) or (found.scope if isinstance(found, Binding) else scope)
    layer = dense_layer(ctx, built, made, at) or embedding_layer(
        ctx, built, _numbers(ctx), made, at
    )
    return [layer] if layer is not None else None


def added_layers(
    ctx: Context, node: cst.BaseExpression, scope: Scope, order: int
) -> list[tuple[cst.BaseExpression, Number | None]] | None:
    """``model = Sequential()`` then ``model.add(layer)`` statements: the layers in order, each
    with how its arguments read (None: as the code says; in a loop over fixed values, with the
    loop's target at each pass's value, ``layer_loops.py``).  Each ``add`` must be a statement
    of the block that binds the model, or of one such loop, before ``order`` (an ``add`` under
    an ``if`` makes the stack depend on the run: None)."""
    if not isinstance(node, cst.Name):
        return None
    bound = ctx.ev.lookup(node.value, scope, order)
    if not isinstance(bound, Binding):
        return None
    block = block_statements(bound.scope)
    layers: list[tuple[cst.BaseExpression, Number | None]] = []
    looped: tuple[cst.For, list[cst.Call], int] | None = None  # a loop's pass, being read
    for site in ctx.info.calls:
        func = site.node.func
        if not (
            isinstance(func, cst.Attribute)
            and func.attr.value == "add"
            and isinstance(func.value, cst.Name)
            and func.value.value == node.value
            and site.order < order
            and ctx.ev.lookup(node.value, site.scope, site.order) is bound
        ):
            continue
        statement, call = site.statement, site.node
        if not isinstance(statement, cst.Expr) or statement.value is not call:
            return None
        if not isinstance(call, cst.Call) or len(call.args) != 1:
            return None
        loop = enclosing_for(bound.scope, call) if id(statement) not in block else None
        made_in_loop = loop is not None and bound.value is not None and contains(loop, bound.value)
        if loop is not None and (made_in_loop or not directly_in(bound.scope, loop)):
            return None  # the model itself is made in the loop (a fold's): not one stack
        if id(statement) not in block and loop is None:
            return None
        if looped is not None and loop is not looped[0]:
            passes = unrolled_passes(ctx, looped[0], looped[1], _numbers(ctx), scope, looped[2])
            if passes is None:
                return None
            layers += passes
            looped = None
        if loop is not None:
            looped = looped or (loop, [], site.order)
            looped[1].append(call.args[0].value)  # type: ignore[arg-type]
        else:
            layers.append((call.args[0].value, None))
    if looped is not None:
        passes = unrolled_passes(ctx, looped[0], looped[1], _numbers(ctx), scope, looped[2])
        if passes is None:
            return None
        layers += passes
    return layers or None


def _returned_call(ctx: Context, call: cst.Call) -> cst.Call | None:
    """``build()`` of a module function that returns one call: that call."""
    if not isinstance(call.func, cst.Name):
        return None
    scope = ctx.info.functions.get(call.func.value)
    if scope is None or not isinstance(scope.node, cst.FunctionDef):
        return None
    returns = scope.returns  # (order, value) of each `return value`, recorded by the module walk
    if len(returns) != 1 or not isinstance(returns[0][1], cst.Call):
        return None
    return returns[0][1]


def _scope_of(ctx: Context, call: cst.Call) -> Scope | None:
    return next((s.scope for s in ctx.info.calls if s.node is call), None)


def _order_of(ctx: Context, call: cst.Call) -> int:
    return next((s.order for s in ctx.info.calls if s.node is call), 0)


def functional_layers(ctx: Context, model: cst.Call, scope: Scope) -> list[dict] | None:
    """``keras.Model(inputs, outputs)`` with ``outputs = Dense(...)(Dense(...)(inputs))``,
    the chain perhaps built in a loop over fixed values (``layer_loops.py``)."""
    outputs = ctx.arg(model, 1, "outputs")
    order = _order_of(ctx, model)
    number = _numbers(ctx)
    chain: list[tuple[cst.Call, Number]] = []  # each layer, and how its arguments read
    looped: tuple[cst.For, list[cst.Call]] | None = None  # a loop's pass, being walked
    node = outputs
    for _ in range(32):
        node, order = _unaliased(ctx, node, scope, order)  # h = inputs
        call = _bound_call(ctx, node, scope, order) if node is not None else None
        if call is None:
            return None
        loop = enclosing_for(scope, call) if _carried(node, call) else None
        if looped is not None and loop is not looped[0]:  # the walk left the loop's body
            walked = list(reversed(looped[1]))  # the walk met the pass's last layer first
            passes = unrolled_passes(ctx, looped[0], walked, number, scope, order)
            if passes is None:
                return None
            chain += reversed(passes)
            looped = None
        kind = _leaf(ctx, call)
        if kind in ("Input", "InputLayer"):
            shape = _ints(ctx, ctx.arg(call, 0, "shape"), scope, _order_of(ctx, call))
            layers = [_chain_layer(ctx, c, num, scope, order) for c, num in reversed(chain)]
            if None in layers or not any(
                layer and ("units" in layer or "layer" in layer) for layer in layers
            ):
                return None
            out = [layer for layer in layers if layer is not None]
            out[0]["input_dim"] = shape[-1] if shape else None
            out[0]["input_shape"] = shape
            return out
        if not isinstance(call.func, cst.Call) or not call.args:
            return None  # a layer applied to a value: Dense(...)(x)
        if loop is not None:
            looped = looped or (loop, [])
            looped[1].append(call.func)
        else:
            chain.append((call.func, number))
        node = call.args[0].value
        order = _order_of(ctx, call)
    return None


def _carried(node: cst.BaseExpression | None, call: cst.Call) -> bool:
    """``h = Layer(...)(h)``: the layer's input is the name it rebinds, as a loop that stacks
    layers writes it (``h = Dense(64)(inputs)`` in a fold's loop makes one layer)."""
    arg = call.args[0].value if call.args else None
    return isinstance(node, cst.Name) and isinstance(arg, cst.Name) and arg.value == node.value


def _unaliased(
    ctx: Context, node: cst.BaseExpression | None, scope: Scope, order: int
) -> tuple[cst.BaseExpression | None, int]:
    """The value a name is another name for (``h = inputs`` before a loop of layers)."""
    for _ in range(8):
        found = ctx.ev.lookup(node.value, scope, order) if isinstance(node, cst.Name) else None
        if not (isinstance(found, Binding) and found.index is None):
            break
        if not isinstance(found.value, cst.Name):
            break
        node, order = found.value, found.at
    return node, order


def _chain_layer(ctx: Context, c: cst.Call, num: Number, scope: Scope, order: int) -> dict | None:
    return (
        dense_layer(ctx, c, scope, order, num)
        or dropout_layer(ctx, c, scope, order, num)
        or conv_layer(ctx, c, scope, order, num)
        or pool_layer(ctx, c, scope, order, num)
        or flatten_layer(ctx, c)
        or batch_norm_layer(ctx, c, num, scope, order)
        or recurrent_layer(ctx, c, num, scope, order)
        or stack_layer(ctx, c, scope, _order_of(ctx, c))
    )


def dense_layer(
    ctx: Context, layer: cst.Call, scope: Scope, order: int, num: Number | None = None
) -> dict | None:
    """A ``Dense(units, activation=...)`` layer as plain data, or None for another layer."""
    number = num or _numbers(ctx)
    if _leaf(ctx, layer) != "Dense":
        return None
    units = number(ctx.arg(layer, 0, "units"), scope, order)
    act = ctx.arg(layer, 1, "activation")
    activation = None
    if isinstance(act, cst.SimpleString):
        activation = str(act.evaluated_value)
    elif act is not None and not (isinstance(act, cst.Name) and act.value == "None"):
        activation = (ctx.info.imports.resolve(act) or "").rsplit(".", 1)[-1] or "?"
    if units is None or (activation is not None and not _traceable_activation(activation)):
        return None
    if any(a.keyword is not None and a.keyword.value not in _DENSE_KEYWORDS for a in layer.args):
        return None  # a regularizer adds to the loss, a constraint moves the weights: not read
    kernel = keras_initializer(ctx, ctx.arg(layer, -1, "kernel_initializer"), scope, order, number)
    bias = _bias_initializer(ctx, ctx.arg(layer, -1, "bias_initializer"), scope, order, number)
    if bias is None or kernel is None:
        return None
    use_bias = ctx.arg(layer, -1, "use_bias")
    return {
        "units": int(units),
        "activation": activation,
        "kernel_initializer": kernel.pop("init"),
        "kernel_params": kernel,  # an initializer's spread (RandomNormal(stddev=0.01))
        "use_bias": not (isinstance(use_bias, cst.Name) and use_bias.value == "False"),
        "bias": bias,
    }


# the layers whose output has a steps axis that a global 1-D pooling reduces
_SEQUENCE = frozenset({"embedding", "recurrent", "conv1d"})

# Dense's keywords the slice reads (the layer's input shape is read where the stack is)
_DENSE_KEYWORDS = frozenset({"units", "activation", "use_bias", "kernel_initializer",
                             "bias_initializer", "name", "input_shape", "input_dim"})  # fmt: skip


def dropout_layer(
    ctx: Context, layer: cst.Call, scope: Scope, order: int, num: Number | None = None
) -> dict | None:
    """A ``Dropout(rate)`` layer: ``{"dropout": rate}`` (the rate None when the code does not
    fix it).  The slice trains without it, and says so."""
    if _leaf(ctx, layer) != "Dropout":
        return None
    rate = (num or _numbers(ctx))(ctx.arg(layer, 0, "rate"), scope, order)
    return {"dropout": rate}


def _traceable_activation(name: str) -> bool:
    """A Keras activation string the run can apply: ``"linear"``, or a registered op of that
    name that traces (``"relu"``, ``"sigmoid"``, ``"softmax"``...)."""
    op = ops.REGISTRY.get(name)
    return name == "linear" or (op is not None and bool(op.trace))


def sequential_layers(
    ctx: Context,
    built: cst.Call,
    scope: Scope,
    order: int,
    num: Number | None = None,
    given: list[tuple[cst.BaseExpression, Number | None]] | None = None,
) -> list[dict] | None:
    """The layers of ``keras.Sequential([...])`` (or of the layers ``given``, which
    :func:`added_layers` read): Dense and Dropout, Keras activation layers and the program's
    own layers (``program_layers.py``), or None for any other layer or model."""
    stack_number = num or _numbers(ctx)
    if given is None:
        items = ctx.arg(built, 0, "layers")
        if not isinstance(items, (cst.List, cst.Tuple)):
            return None
        given = [(e.value, None) for e in items.elements]
    layers: list[dict] = []
    input_dim = None
    input_shape: list | None = None
    for layer, own in given:
        number = own or stack_number  # a layer added in a loop reads its pass's value
        if not isinstance(layer, cst.Call):
            return None
        kind = _leaf(ctx, layer)
        if kind in ("Input", "InputLayer"):
            shape = _ints(ctx, ctx.arg(layer, 0, "shape", "input_shape"), scope, order, number)
            input_dim = shape[-1] if shape else None
            input_shape = shape
            continue
        if kind == "Flatten":  # (rows, 28, 28) -> (rows, 784): first, on a declared shape
            shape = _ints(ctx, ctx.arg(layer, -1, "input_shape"), scope, order, number)
            dims = shape or input_shape
            if any("conv" in x or "pool2d" in x for x in layers):  # its width: the images'
                layers.append({"flatten": None})
                continue
            if layers or not dims or None in dims:
                return None
            input_dim = int(math.prod(dims))
            layers.append({"flatten": input_dim})
            continue
        dense = (
            dense_layer(ctx, layer, scope, order, number)
            or dropout_layer(ctx, layer, scope, order, number)
            or (embedding_layer(ctx, layer, number, scope, order) if not layers else None)
            or (pooling_layer(ctx, layer) if any(_SEQUENCE & set(x) for x in layers) else None)
            or recurrent_layer(ctx, layer, number, scope, order)
        )
        dense = (
            dense
            or conv_layer(ctx, layer, scope, order, number)
            or pool_layer(ctx, layer, scope, order, number)
            or batch_norm_layer(ctx, layer, number, scope, order)
            or stack_layer(ctx, layer, scope, order)  # ReLU(), a layer of its own
        )
        if dense is None:
            return None
        shape = _ints(ctx, ctx.arg(layer, -1, "input_shape", "input_dim"), scope, order, number)
        if shape and not layers:
            input_dim, input_shape = shape[-1], shape
        layers.append(dense)
    if not any("units" in layer or "layer" in layer for layer in layers):
        return None
    layers[0]["input_dim"] = input_dim
    layers[0]["input_shape"] = input_shape
    return layers
