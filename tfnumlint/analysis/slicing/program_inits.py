"""Where a training program's weights start, read from its code (static side, no TF import).

A ``tf.Variable`` / ``get_variable`` with the initializer the code gives it (a TF1 initializer
function, a draw, a constant, a NumPy start of the program's), and a Keras layer's initializer
(a name or an object, with Keras's default spreads), as plain data for the training rung; a
start the rung would not rebuild is None.  Also the numbers and shapes the code fixes, which
every layer reader uses.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import libcst as cst

from ..context import Context
from ..module import Scope
from .program_inline import inlined
from .slicer import Slicer

# Keras's RandomUniform default range (an Embedding's start, and an add_weight's "uniform")
KERAS_UNIFORM: dict[str, object] = {"minval": -0.05, "maxval": 0.05}

# Keras's default initializers, and the TF initializer calls a weight may be made with
_INIT_CALLS = {
    "zeros": "zeros",
    "ones": "ones",
    "normal": "normal",
    "random_normal": "normal",
    "truncated_normal": "truncated_normal",
    "uniform": "uniform",
    "random_uniform": "uniform",
    "constant": "constant",
    "fill": "constant",
}
_INITIALIZERS = {
    "HeUniform": "he_uniform",
    "LecunNormal": "lecun_normal",
    "LecunUniform": "lecun_uniform",
    "Orthogonal": "orthogonal",
    "glorot_normal_initializer": "glorot_normal",
    "glorot_uniform_initializer": "glorot_uniform",
    "GlorotNormal": "glorot_normal",
    "GlorotUniform": "glorot_uniform",
    "zeros_initializer": "zeros",
    "Zeros": "zeros",
    "ones_initializer": "ones",
    "Ones": "ones",
    "he_normal": "he_normal",
    "HeNormal": "he_normal",
    "random_normal_initializer": "normal",
    "RandomNormal": "normal",
    "RandomUniform": "uniform",
    "truncated_normal_initializer": "truncated_normal",
    "TruncatedNormal": "truncated_normal",
    "constant_initializer": "constant",
    "Constant": "constant",
}


# Keras initializers' default spreads (TF1's initializer functions default to 1)
_KERAS_SPREAD: dict[str, dict[str, object]] = {
    "normal": {"stddev": 0.05}, "truncated_normal": {"stddev": 0.05}, "uniform": KERAS_UNIFORM,
}  # fmt: skip

# A number the code fixes at (node, scope, order), or None: ``_number``, or the program slice's
# reading of it, which also knows what an inlined method's parameters are bound to
Number = Callable[[cst.BaseExpression | None, Scope, int], "float | None"]


def _ints(
    ctx: Context,
    node: cst.BaseExpression | None,
    scope: Scope,
    order: int,
    num: Number | None = None,
) -> list | None:
    """A literal shape: a list/tuple of ints, module constants or None."""
    if node is None:
        return None
    number = num or _numbers(ctx)
    if not isinstance(node, (cst.List, cst.Tuple)):
        c = number(node, scope, order)
        return [int(c)] if c is not None and float(c).is_integer() else None
    out: list = []
    for e in node.elements:
        if isinstance(e.value, cst.Name) and e.value.value == "None":
            out.append(None)
            continue
        c = number(e.value, scope, order)
        if c is None or not float(c).is_integer():
            return None
        out.append(int(c))
    return out


def _number(
    ctx: Context, node: cst.BaseExpression | None, scope: Scope, order: int
) -> float | None:
    """A number the code fixes: a constant, or host math on literals (``np.log(4.0)``)."""
    if node is None:
        return None
    const = ctx.ev.value(node, scope, order).const
    if const is None:
        reader = Slicer(ctx, {})
        reader.fold_tf_math = True
        const = reader._host_constant(node, 0, (scope, order))
    return None if const is None else float(const)


def _numbers(ctx: Context) -> Number:
    return lambda node, scope, order: _number(ctx, node, scope, order)


def _leaf(ctx: Context, call: cst.Call) -> str:
    """The TF/Keras function a call makes, by its last name ("" for the program's own
    function: a helper called ``normal`` is read from its body, never taken for the op)."""
    return (ctx.info.imports.resolve(call.func) or "").rsplit(".", 1)[-1]


def initializer(
    ctx: Context, call: cst.Call, scope: Scope, order: int, num: Number | None = None
) -> dict | None:
    """How a weight starts: ``tf.Variable(tf.random.truncated_normal([784, 256], stddev=0.1))``
    or ``get_variable("w", [4, 16], initializer=glorot_normal_initializer())``."""
    number = num or _numbers(ctx)
    name = (ctx.info.imports.resolve(call.func) or "").rsplit(".", 1)[-1]
    if name == "get_variable":
        shape = _ints(ctx, ctx.arg(call, 1, "shape"), scope, order, number)
        init = ctx.arg(call, 3, "initializer")
        spec = {"init": "glorot_uniform"}  # get_variable's default
        if isinstance(init, cst.Call):
            kind = _INITIALIZERS.get(_leaf(ctx, init))
            params = _init_params(ctx, init, scope, order, number)
            if kind is None or params is None:
                return None
            spec = {"init": kind, **_spread_default(ctx, init, kind), **params}
        elif init is not None:
            return None
        return {**spec, "shape": shape} if shape is not None else None
    value = ctx.arg(call, 0, "initial_value")
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and not _leaf(ctx, value):
        value = inlined(ctx, value, scope, order)  # tf.Variable(xavier_init([784, 128]))
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Call):
        # ``tf.Variable(GlorotUniform(seed=1)((n_in, n_out)))``: an initializer object called
        # on the shape
        kind = _INITIALIZERS.get(_leaf(ctx, value.func))
        shape = _ints(ctx, ctx.arg(value, 0, "shape"), scope, order, number)
        params = _init_params(ctx, value.func, scope, order, number)
        if kind is None or shape is None or params is None:
            return None
        return {"init": kind, "shape": shape, **_spread_default(ctx, value.func, kind), **params}
    if isinstance(value, cst.Call):
        kind = _INIT_CALLS.get(_leaf(ctx, value))
        if kind is None:
            return _drawn(ctx, value, scope, order)
        if kind == "constant":
            c = number(value.args[0].value, scope, order) if value.args else None
            literal = _ints_or_floats(
                ctx, value.args[0].value if value.args else None, scope, order, number
            )
            shape = _ints(ctx, ctx.arg(value, 2, "shape"), scope, order, number)
            if c is not None:
                return {"init": "constant", "value": c, "shape": shape or []}
            if literal is not None:
                return {"init": "literal", "value": literal, "shape": [len(literal)]}
            return None
        shape = _ints(ctx, ctx.arg(value, 0, "shape"), scope, order, number)
        params = _init_params(ctx, value, scope, order, number)
        if shape is None or params is None:
            return None
        return {"init": kind, "shape": shape, **params}
    if value is not None:
        literal = _ints_or_floats(ctx, value, scope, order, number)
        if literal is not None:
            return {"init": "literal", "value": literal, "shape": [len(literal)]}
        c = number(value, scope, order)
        if c is not None:
            return {"init": "constant", "value": c, "shape": []}
        return _drawn(ctx, value, scope, order)
    return None


def _spread_default(ctx: Context, call: cst.Call, kind: str) -> dict:
    """The spread a Keras initializer class draws with when none is given (``RandomNormal()``
    at 0.05); TF1's initializer functions (``random_normal_initializer()``) default to 1."""
    keras_class = re.fullmatch(r"[A-Z]\w*", _leaf(ctx, call)) is not None
    return dict(_KERAS_SPREAD.get(kind, {})) if keras_class else {}


def _drawn(ctx: Context, value: cst.BaseExpression, scope: Scope, order: int) -> dict | None:
    """``tf.Variable(rng.randn())``, ``tf.Variable(np.random.randn(3, 1) * 0.01)``: a start
    the program's NumPy code makes, replayed (each start of the weights with a draw of its
    own); None when the code does not say what it holds, or its shape."""
    try:
        from .. import datagen
        from ..recipe_shapes import recipe_shape
    except ImportError:
        return None
    recipe = datagen.data_recipe(ctx.ev, value, scope, order)
    shape = recipe_shape(recipe) if recipe is not None else None
    if recipe is None or shape is None:
        return None
    return {"init": "drawn", "recipe": recipe, "shape": list(shape)}


def _ints_or_floats(
    ctx: Context,
    node: cst.BaseExpression | None,
    scope: Scope,
    order: int,
    num: Number | None = None,
):
    if not isinstance(node, (cst.List, cst.Tuple)):
        return None
    number = num or _numbers(ctx)
    out = [number(e.value, scope, order) for e in node.elements]
    return out if out and None not in out else None


def _init_params(
    ctx: Context, call: cst.Call, scope: Scope, order: int, num: Number | None = None
) -> dict | None:
    """The spread a draw or an initializer object is given (``mean``/``stddev``, ``minval``/
    ``maxval``, ``value``), by keyword or in its place (a draw takes its shape first:
    ``tf.random.normal(shape, mean, stddev)``; an object does not: ``RandomNormal(mean,
    stddev)``).  None when one is given but is not a number the code fixes: the default
    would be a wrong start, not an assumption."""
    number = num or _numbers(ctx)
    leaf = _leaf(ctx, call)
    first = 1 if leaf in _INIT_CALLS else 0
    kind = _INIT_CALLS.get(leaf) or _INITIALIZERS.get(leaf)
    places = {"mean": first, "stddev": first + 1} if kind in ("normal", "truncated_normal") else {}
    if kind == "uniform" or leaf == "RandomUniform":
        places = {"minval": first, "maxval": first + 1}
    positional = [a.value for a in call.args if a.keyword is None]
    out = {}
    for key in ("mean", "stddev", "minval", "maxval", "value"):
        node = next((a.value for a in call.args if a.keyword and a.keyword.value == key), None)
        if node is None and key in places and len(positional) > places[key]:
            node = positional[places[key]]
        if node is None:
            continue
        v = number(node, scope, order)
        if v is None:
            return None
        out[key] = v
    return out


def keras_initializer(
    ctx: Context, node: cst.BaseExpression | None, scope: Scope, order: int, number: Number
) -> dict | None:
    """Keras's initializer as the rung draws it: None (Keras's default for a float weight,
    glorot-uniform), a name (``"ones"``) or an initializer object (``Constant(0.5)``,
    ``RandomNormal(stddev=0.02)``), each read as Keras resolves it (a name is its class in
    snake case); None for one the rung does not rebuild."""
    if node is None or (isinstance(node, cst.Name) and node.value == "None"):
        return {"init": "glorot_uniform"}
    if isinstance(node, cst.SimpleString):
        name = str(node.evaluated_value)
        kind = _INITIALIZERS.get("".join(w.capitalize() for w in name.split("_")))
        return {"init": kind, **_KERAS_SPREAD.get(kind or "", {})} if kind else None
    if not isinstance(node, cst.Call):
        return None
    leaf = _leaf(ctx, node)
    params = _init_params(ctx, node, scope, order, number)
    if params is None:
        return None
    kind = _INITIALIZERS.get(leaf)
    if kind is None or not re.fullmatch(r"[A-Z]\w*", leaf):  # Keras's classes, not TF1's
        return None
    if kind == "constant":  # Constant(0.5), Constant(value=0.5); Constant(): 0
        given = ctx.arg(node, 0, "value")
        value = 0.0 if given is None else number(given, scope, order)
        return {"init": "constant", "value": value} if value is not None else None
    return {"init": kind, **_spread_default(ctx, node, kind), **params}


def _bias_initializer(
    ctx: Context,
    node: cst.BaseExpression | None,
    scope: Scope,
    order: int,
    num: Number | None = None,
) -> dict | None:
    """A Dense bias's start: zeros (Keras's default), ``Constant(c)``, or ``Constant(v)`` of a
    value of the data (``float(counts.mean())``: its recipe, replayed with the data)."""
    number = num or _numbers(ctx)
    if node is None:
        return {"init": "zeros"}
    if isinstance(node, cst.SimpleString):
        return {"init": "zeros"} if node.evaluated_value == "zeros" else None
    if not isinstance(node, cst.Call) or _leaf(ctx, node) not in (
        "Constant",
        "constant_initializer",
    ):
        return None
    value = ctx.arg(node, 0, "value")
    while (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Name)
        and value.func.value in ("float", "int")
        and value.args
    ):
        value = value.args[0].value  # float(counts.mean()): the builtin only converts
    c = number(value, scope, order)
    if c is not None:
        return {"init": "constant", "value": c}
    try:
        from .. import datagen
    except ImportError:
        return None
    recipe = datagen.data_recipe(ctx.ev, value, scope, order) if value is not None else None
    return {"init": "constant", "recipe": recipe} if recipe is not None else None
