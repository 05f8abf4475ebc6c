"""The layers a model stacks besides Dense and Dropout, read for the training rung (static side,
no TF import).

In a ``keras.Sequential([...])`` or a functional ``keras.Model``, a Keras activation layer
(``ReLU()``, ``Softmax()``, ``Activation("tanh")``) applies its activation op to what reaches
it; a layer made by a class the program defines (``MyNorm()``, a subclass of
``keras.layers.Layer``) is an entry that the program slice follows as that object's ``call``,
its weights those of its ``build``/``__init__`` (``program_weights.py``).  Whether such a class
can be followed is decided where it is followed (``program.py``): here it is only a
constructor call of the program's own code, not of TensorFlow or Keras.

A sequence model's ``Embedding(vocab, dim)`` first, then ``GlobalAveragePooling1D()`` /
``GlobalMaxPooling1D()`` over the steps: the embedding is a table weight that the ids pick rows
of (whole numbers below ``vocab``, which is how their draws are made when no data code gives
them), the pooling a reduction over axis 1.  A layer whose behaviour the slice would not
reproduce (``mask_zero=True``, which makes the pooling skip padding; an initializer object)
is not read, and the stack stays cut.

A ``BatchNormalization()`` with Keras's defaults on the last axis normalises each feature over
the batch (the rows, and an image's positions) as it trains: ``(x - mean) / sqrt(var + eps)``,
scaled by ``gamma`` and shifted by ``beta``, weights that start at 1 and 0.  Called in inference
(a tape step's ``model(x)`` without ``training=True``), it reads its moving statistics, which
start at 0 and 1 and move only in training: ``x / sqrt(1 + eps)``.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from ... import ops
from ..context import Context
from ..module import Scope
from .program_inits import KERAS_UNIFORM, _number


def _activation_of(op: str | None) -> str | None:
    """The activation op a Keras activation layer (``ReLU``, ``Softmax``) applies, as the
    registry's transfer for the layer names it."""
    entry = ops.REGISTRY.get(op or "")
    transfer = entry.transfer if entry is not None else None
    if transfer is None or transfer.rule != "activation_layer_of":
        return None
    return transfer.kind


def _traceable(name: str) -> bool:
    op = ops.REGISTRY.get(name)
    return op is not None and bool(op.trace)


def stack_layer(ctx: Context, layer: cst.Call, scope: Scope, order: int) -> dict | None:
    """A stacked layer other than Dense and Dropout as plain data: ``{"act": op}`` for a Keras
    activation layer with its defaults, ``{"layer": call, ...}`` for an object of a class of the
    program's own (the call, where it is made), None for anything else."""
    op = ctx.op(layer)
    if (scaled := _scaling_layer(ctx, layer, scope, order)) is not None:
        return scaled
    if (act := _activation_of(op)) is not None:
        # ReLU(max_value=6), Softmax(axis=1): not the plain activation
        return None if layer.args or not _traceable(act) else {"act": act}
    if op == "activation_layer":
        given = ctx.arg(layer, 0, "activation")
        if len(layer.args) != 1 or not isinstance(given, cst.SimpleString):
            return None
        name = str(given.evaluated_value)
        if name == "linear":
            return {"act": None}
        return {"act": name} if _traceable(name) else None
    if op is not None or not isinstance(layer.func, (cst.Name, cst.Attribute)):
        return None
    resolved = ctx.info.imports.resolve(layer.func) or ""
    if resolved.split(".", 1)[0] in ("tf", "keras"):
        return None  # a Keras layer the slice does not read (Conv1D, BatchNormalization...)
    return {"layer": layer, "scope": scope, "order": order}


def _scaling_layer(ctx: Context, layer: cst.Call, scope: Scope, order: int) -> dict | None:
    """``LeakyReLU(0.2)`` (Keras's slope 0.3 when none is given) and ``Rescaling(scale,
    offset=0.0)``, as ``{"act": ...}`` entries; None for another layer or a value the code
    does not fix."""
    kind = _keras_layer(ctx, layer)
    if kind == "LeakyReLU":
        given = ctx.arg(layer, 0, "negative_slope", "alpha")
        slope = 0.3 if given is None else _number(ctx, given, scope, order)
        return None if slope is None else {"act": "leaky_relu", "alpha": slope}
    if kind == "Rescaling":
        scale = _number(ctx, ctx.arg(layer, 0, "scale"), scope, order)
        given = ctx.arg(layer, 1, "offset")
        offset = 0.0 if given is None else _number(ctx, given, scope, order)
        if scale is None or offset is None:
            return None
        return {"act": "rescale", "scale": scale, "offset": offset}
    return None


def activated(out: dict, layer: dict) -> dict:
    """``out`` through an ``{"act": ...}`` entry of a stack: its op, a leaky ReLU's slope,
    or a rescaling's ``out * scale + offset`` (``act`` None: a linear activation)."""
    act = layer["act"]
    if act is None:
        return out
    if act == "rescale":
        scaled = {"k": "bin", "op": "*", "l": out, "r": {"k": "const", "v": layer["scale"]}}
        return {"k": "bin", "op": "+", "l": scaled, "r": {"k": "const", "v": layer["offset"]}}
    kw = {"alpha": {"k": "const", "v": layer["alpha"]}} if "alpha" in layer else {}
    return {"k": "call", "op": act, "args": [out], "kw": kw}


_EMBEDDING_INIT: dict[str, object] = {"init": "uniform", **KERAS_UNIFORM}
_STRING_INITS: dict[str, dict[str, object]] = {
    "uniform": _EMBEDDING_INIT,
    "random_uniform": _EMBEDDING_INIT,
    "glorot_uniform": {"init": "glorot_uniform"},
    "glorot_normal": {"init": "glorot_normal"},
    "zeros": {"init": "zeros"},
}
_POOLS = {"GlobalAveragePooling1D": "mean", "GlobalMaxPooling1D": "max"}


def _keras_layer(ctx: Context, call: cst.Call) -> str:
    """The Keras layer class ``call`` makes (``Embedding``), or "" for anything else (a
    project class of that name is not Keras's)."""
    resolved = ctx.info.imports.resolve(call.func) or ""
    if ".layers." not in f".{resolved}" or "keras" not in resolved:
        return ""
    return resolved.rsplit(".", 1)[-1]


def _is_true(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def embedding_layer(ctx: Context, call: cst.Call, number, scope: Scope, order: int) -> dict | None:
    """``Embedding(input_dim, output_dim)``: ``{"embedding": vocab, "dim": dim, "init": ...}``,
    or None (another layer, a size the code does not fix, masking, an initializer object)."""
    if _keras_layer(ctx, call) != "Embedding":
        return None
    vocab = number(ctx.arg(call, 0, "input_dim"), scope, order)
    dim = number(ctx.arg(call, 1, "output_dim"), scope, order)
    if vocab is None or dim is None or _is_true(ctx.arg(call, -1, "mask_zero")):
        return None
    init = ctx.arg(call, -1, "embeddings_initializer")
    if init is None:
        start = _EMBEDDING_INIT
    elif isinstance(init, cst.SimpleString) and init.evaluated_value in _STRING_INITS:
        start = _STRING_INITS[str(init.evaluated_value)]
    else:
        return None
    return {"embedding": int(vocab), "dim": int(dim), "init": dict(start)}


def pooling_layer(ctx: Context, call: cst.Call) -> dict | None:
    """``GlobalAveragePooling1D()`` / ``GlobalMaxPooling1D()`` over the steps (channels last):
    ``{"pool": "mean" | "max"}``, or None."""
    kind = _POOLS.get(_keras_layer(ctx, call))
    if kind is None or ctx.arg(call, 0, "data_format") is not None:
        return None
    return {"pool": kind}


def lookup(table: dict, ids: dict, vocab: int) -> dict:
    """The rows of ``table`` the whole-number ``ids`` pick (``vocab`` of them)."""
    depth = {"k": "const", "v": float(vocab)}
    return {"k": "call", "op": "embedding_lookup", "args": [table, ids, depth], "kw": {}}


def pooled(out: dict, kind: str) -> dict:
    """``out`` reduced over its steps (axis 1), as a global 1-D pooling layer does."""
    op = "reduce_mean" if kind == "mean" else "reduce_max"
    axis, keep = {"k": "const", "v": 1}, {"k": "bool", "v": False}
    return {"k": "call", "op": op, "args": [out, axis, keep], "kw": {}}


# BatchNormalization's keywords the slice computes as Keras does (momentum only moves the
# moving statistics, which a training forward does not read); any other is not read
_NORM_KEYWORDS = frozenset({"epsilon", "center", "scale", "momentum", "axis", "name"})


def batch_norm_layer(ctx: Context, call: cst.Call, number, scope: Scope, order: int) -> dict | None:
    """``BatchNormalization(epsilon=..., center=..., scale=...)`` on the last axis:
    ``{"batchnorm": {"epsilon", "center", "scale"}}``, or None (another layer, another axis,
    a renormalisation, an initializer or constraint of its own)."""
    if _keras_layer(ctx, call) != "BatchNormalization":
        return None
    given = {a.keyword.value for a in call.args if a.keyword is not None}
    if any(a.keyword is None for a in call.args) or not given <= _NORM_KEYWORDS:
        return None
    axis = ctx.arg(call, -1, "axis")
    if axis is not None and number(axis, scope, order) != -1:
        return None
    eps = ctx.arg(call, -1, "epsilon")
    epsilon = number(eps, scope, order) if eps is not None else 1e-3
    if epsilon is None:
        return None
    flags = {k: not _is_false(ctx.arg(call, -1, k)) for k in ("center", "scale")}
    return {"batchnorm": {"epsilon": float(epsilon), **flags}}


def _is_false(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def moments(x: dict, axis: dict, keepdims: dict) -> tuple[dict, dict]:
    """The mean and the variance of ``x`` over ``axis``, as ``tf.nn.moments`` computes them: a
    ``reduce_mean``, and the ``reduce_mean`` of the squared deviation from the mean kept in
    place (``keepdims``: whether both keep the reduced axes)."""
    kept = {"k": "bool", "v": True}

    def mean(t: dict, keep: dict) -> dict:
        return {"k": "call", "op": "reduce_mean", "args": [t, axis, keep], "kw": {}}

    deviation = {"k": "bin", "op": "-", "l": x, "r": mean(x, kept)}
    return mean(x, keepdims), mean({"k": "call", "op": "square", "args": [deviation], "kw": {}},
                                   keepdims)  # fmt: skip


def normalized(ps, at: str, layer: dict, out: dict, images: list | None, fan_in: object,
               training: bool) -> dict | None:  # fmt: skip
    """``out`` through a batch normalisation (see the module docstring), its ``gamma`` and
    ``beta`` added to the slice's weights as ``{at}.gamma`` / ``{at}.beta``; with ``images``
    (their [h, w, channels]), over the rows and every position, else over the rows of
    ``fan_in`` features.  None when the width is not known."""
    width = images[2] if images is not None else fan_in
    if not isinstance(width, int):
        return None
    norm = layer["batchnorm"]
    eps = {"k": "const", "v": norm["epsilon"]}
    var: dict[str, Any]
    if training:
        axes = [0, 1, 2] if images is not None else [0]
        axis = {"k": "tuple", "items": [{"k": "const", "v": a} for a in axes]}
        kept = {"k": "bool", "v": True}
        mean, var = moments(out, axis, kept)
        centred = {"k": "bin", "op": "-", "l": out, "r": mean}
    else:  # the moving statistics, at their start
        centred, var = out, {"k": "const", "v": 1.0}
    spread = {"k": "call", "op": "sqrt", "args": [{"k": "bin", "op": "+", "l": var, "r": eps}],
              "kw": {}}  # fmt: skip
    out = {"k": "bin", "op": "/", "l": centred, "r": spread}
    if norm["scale"]:
        ps.weights[f"{at}.gamma"] = {"init": "ones", "shape": [width]}
        out = {"k": "bin", "op": "*", "l": out, "r": {"k": "input", "name": f"{at}.gamma"}}
    if norm["center"]:
        ps.weights[f"{at}.beta"] = {"init": "zeros", "shape": [width]}
        out = {"k": "bin", "op": "+", "l": out, "r": {"k": "input", "name": f"{at}.beta"}}
    return out
