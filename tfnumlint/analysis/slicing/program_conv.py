"""Convolutional networks in the training rung's slice (static side, no TF import).

TF1's ``tf.nn.conv2d(x, W, strides, padding)``, ``tf.nn.max_pool`` / ``avg_pool`` and
``tf.nn.dropout(h, keep_prob)``, and Keras's ``Conv2D``, ``MaxPooling2D`` /
``AveragePooling2D`` and a ``Flatten`` after them, written as the rung-only ops
``conv2d_nhwc`` and ``pool2d_nhwc`` (channels-last images, as the program computes them).  A
finding's own probe still takes a convolution's output as one input: its per-point values have
no image axes.

Only what the code fixes is read: literal strides, windows and paddings, channels-last data,
no dilation, a 4-D kernel whose shape the slice knows.  Anything else leaves the slice cut.
A Keras stack's image shape is tracked layer by layer from its ``input_shape`` (or the data's
recipe shape), so the kernel of each ``Conv2D`` and the width of the ``Flatten`` after them are
the ones Keras builds.

``tf.nn.dropout``'s keep probability is a placeholder in TF1 programs, fed one value when the
program trains (``sess.run(train_step, feed_dict={..., keep_prob: 0.5})``) and another when it
evaluates: the value of the training feeds is read.  When the code does not give it, the slice
trains without dropout and says so (``assumed``: no confirmation rests on it).
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import libcst as cst

from ... import ops
from ..context import Context
from ..module import Binding, Scope
from .program_einsum import data_shape
from .program_inits import keras_initializer
from .program_layers import _keras_layer, _traceable
from .slicer import Slicer


class ProgramSlicer(Protocol):
    """What this module reads and writes of ``program.ProgramSlicer``."""

    weights: dict[str, dict]
    data: dict[str, dict]
    assumed: list[str]
    slicer: Slicer

    @property
    def ctx(self) -> Context: ...

    def number(self, node: cst.BaseExpression | None, scope: Scope, order: int) -> float | None: ...


# the arguments of the image ops whose default (or the value given) is the one the slice writes:
# an image op's layout, dilation and the names that do not change what it computes
_NEUTRAL = frozenset({"name", "use_cudnn_on_gpu", "data_format", "dilations", "dilation_rate"})
_CHANNELS_LAST = frozenset({"NHWC", "channels_last"})
# Keras's 2-D pooling layers and the window reduction each computes
_POOL_LAYERS = {"MaxPooling2D": "MAX", "MaxPool2D": "MAX", "AveragePooling2D": "AVG",
                "AvgPool2D": "AVG"}  # fmt: skip
_CONV_LAYERS = frozenset({"Conv2D", "Convolution2D"})
_CONV1D_LAYERS = frozenset({"Conv1D", "Convolution1D"})
# the keywords a Keras Conv2D may be given that the slice reads (or that do not change what it
# computes in training: a name, an input shape the stack's tracking reads)
_CONV_KEYWORDS = frozenset(
    {"filters", "kernel_size", "strides", "padding", "activation", "use_bias", "input_shape",
     "kernel_initializer", "bias_initializer", "name"}
)  # fmt: skip  # data_format and dilation_rate: read only at their defaults (``_neutral``)


def image_op(ctx: Context, call: cst.Call) -> bool:
    """Is ``call`` an image op (or TF's dropout) the program slice reads (``image_call``)?"""
    return ctx.op(call) in ops.RUNG_FORMS


def image_call(
    ps: ProgramSlicer, call: cst.Call, scope: Scope, order: int, depth: int
) -> dict | None:
    """The rung's node of a convolution, pooling or dropout call, or None (not one, or one the
    slice does not read: it stays cut)."""
    op = ps.ctx.op(call) or ""
    form = ops.RUNG_FORMS.get(op)
    if form == "conv2d_nhwc":
        return _conv(ps, call, scope, order, depth)
    if form == "pool2d_nhwc":
        return _pool(ps, call, ops.POOLING[op], scope, order, depth)
    if form == "dropout":
        return _dropout(ps, call, scope, order, depth)
    return None


def _neutral(ctx: Context, call: cst.Call, keywords: frozenset[str], scope, order, num) -> bool:
    """Every keyword is one the slice reads (``keywords``) or a neutral one at its default:
    channels-last data, a dilation of 1."""
    for a in call.args:
        if a.star:
            return False
        kw = a.keyword.value if a.keyword is not None else None
        if kw is None or kw in keywords:
            continue
        if kw not in _NEUTRAL:
            return False
        if kw == "data_format" and not _channels_last(a.value):
            return False
        if kw in ("dilations", "dilation_rate"):
            rates = _literal_ints(a.value, scope, order, num)
            if rates is None or any(r != 1 for r in rates):
                return False
    return True


def _channels_last(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Name) and node.value == "None":
        return True
    return isinstance(node, cst.SimpleString) and node.evaluated_value in _CHANNELS_LAST


def spatial(ctx: Context, node, scope: Scope, order: int, num, default=None) -> list[int] | None:
    """A stride or window of two spatial axes, ``[h, w]``: from an int, a pair, or TF's
    ``[1, h, w, 1]`` (whose batch and channel entries must be 1); ``default`` when not given."""
    if node is None or (isinstance(node, cst.Name) and node.value == "None"):
        return default
    got = _literal_ints(node, scope, order, num)
    if got is None:
        return None
    if len(got) == 1:
        return [got[0], got[0]]
    if len(got) == 2:
        return got
    if len(got) == 4 and got[0] == got[3] == 1:
        return got[1:3]
    return None


def _literal_ints(node: cst.BaseExpression, scope: Scope, order: int, num) -> list[int] | None:
    """An int, or a list/tuple of ints, that the code fixes."""
    items = [e.value for e in node.elements] if isinstance(node, (cst.List, cst.Tuple)) else [node]
    out = []
    for item in items:
        v = num(item, scope, order)
        if v is None or not float(v).is_integer():
            return None
        out.append(int(v))
    return out


def _padding(node: cst.BaseExpression | None) -> str | None:
    if node is None:
        return "VALID"
    if not isinstance(node, cst.SimpleString) or not isinstance(node.evaluated_value, str):
        return None
    pad = node.evaluated_value.upper()
    return pad if pad in ("SAME", "VALID") else None


def _pair(values: list[int]) -> dict:
    return {"k": "tuple", "items": [{"k": "const", "v": float(v)} for v in values]}


def _conv(ps: ProgramSlicer, call: cst.Call, scope: Scope, order: int, depth: int) -> dict | None:
    """``tf.nn.conv2d(x, W, strides=[1, 1, 1, 1], padding="SAME")`` with a 4-D weight ``W``."""
    ctx = ps.ctx
    read = frozenset({"input", "x", "inputs", "filters", "filter", "kernel", "strides", "padding"})
    if not _neutral(ctx, call, read, scope, order, ps.number):
        return None
    x = ctx.arg(call, 0, "input", "x", "inputs")
    w = ctx.arg(call, 1, "filters", "filter", "kernel")
    strides = spatial(ctx, ctx.arg(call, 2, "strides"), scope, order, ps.number, [1, 1])
    padding = _padding(ctx.arg(call, 3, "padding"))
    if x is None or w is None or strides is None or padding is None:
        return None
    images = ps.slicer.tree(x, scope, order, depth + 1)
    kernel = ps.slicer.tree(w, scope, order, depth + 1)
    shape = ps.weights.get(str(kernel.get("name")), {}).get("shape")
    if kernel.get("k") != "input" or not shape or len(shape) != 4:
        return None  # a kernel whose shape the slice does not know
    args = [images, kernel, _pair(strides), {"k": "str", "v": padding}]
    return ps.slicer._where(call, {"k": "call", "op": "conv2d_nhwc", "args": args, "kw": {}})


def _pool(
    ps: ProgramSlicer, call: cst.Call, kind: str, scope: Scope, order: int, depth: int
) -> dict | None:
    """``tf.nn.max_pool(x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")``."""
    ctx = ps.ctx
    read = frozenset({"input", "value", "x", "inputs", "ksize", "pool_size", "strides", "padding"})
    if not _neutral(ctx, call, read, scope, order, ps.number):
        return None
    x = ctx.arg(call, 0, "input", "value", "x", "inputs")
    window = spatial(ctx, ctx.arg(call, 1, "ksize", "pool_size"), scope, order, ps.number)
    strides = spatial(ctx, ctx.arg(call, 2, "strides"), scope, order, ps.number, window)
    padding = _padding(ctx.arg(call, 3, "padding"))
    if x is None or window is None or strides is None or padding is None:
        return None
    images = ps.slicer.tree(x, scope, order, depth + 1)
    return ps.slicer._where(call, pooled(images, kind, window, strides, padding))


def pooled(images: dict, kind: str, window: list[int], strides: list[int], padding: str) -> dict:
    args = [images, _pair(window), {"k": "str", "v": kind}, _pair(strides)]
    return {"k": "call", "op": "pool2d_nhwc", "args": [*args, {"k": "str", "v": padding}], "kw": {}}


# ------------------------------------------------------------------ dropout


def _dropout(
    ps: ProgramSlicer, call: cst.Call, scope: Scope, order: int, depth: int
) -> dict | None:
    """``tf.nn.dropout(h, keep_prob)`` (TF1's API) or ``tf.nn.dropout(h, rate)`` (TF2's): the
    rung's seeded dropout at the rate the program trains with."""
    ctx = ps.ctx
    if any(a.star for a in call.args) or ctx.arg(call, -1, "noise_shape") is not None:
        return None
    x = ctx.arg(call, 0, "x")
    v1 = _v1_api(ctx, call)
    keep = ctx.arg(call, 1 if v1 else -1, "keep_prob")
    rate = ctx.arg(call, -1 if v1 else 1, "rate")
    if x is None or (keep is None) == (rate is None):
        return None
    given = keep if keep is not None else rate
    assert given is not None
    value = ps.number(given, scope, order)
    if value is None and isinstance(given, cst.Name):
        value = training_feed(ctx, given, scope, order)
    inner = ps.slicer.tree(x, scope, order, depth + 1)
    if value is None:
        what = "keep probability" if keep is not None else "rate"
        said = (
            f"the dropout {what} `{ctx.code(given)}` is not read from the code (no one value "
            "its training run feeds): the slice trains without dropout"
        )
        if said not in ps.assumed:
            ps.assumed.append(said)
        return inner
    dropped = 1.0 - value if keep is not None else value
    if not 0.0 <= dropped < 1.0:
        return None
    if dropped == 0.0:
        return inner
    out = {"k": "call", "op": "dropout", "args": [inner, {"k": "const", "v": dropped}], "kw": {}}
    return ps.slicer._where(call, out)


def _v1_api(ctx: Context, call: cst.Call) -> bool:
    """Is ``tf.nn.dropout`` TF1's, whose second argument is the keep probability?  Spelled
    through ``compat.v1``, or in a module that uses TF1's graph API through plain
    ``tensorflow`` (a placeholder there exists only in TF 1.x)."""
    if ".compat.v1." in f"{ctx.info.imports.path(call.func)}.":
        return True
    for site in ctx.info.calls:
        if ctx.op(site.node) == "placeholder":
            path = ctx.info.imports.path(site.node.func)
            if path.startswith("tensorflow.") and ".compat." not in path:
                return True
    return False


def training_feed(ctx: Context, name: cst.Name, scope: Scope, order: int) -> float | None:
    """The one number a placeholder is fed by the runs that train (``sess.run(train_step,
    feed_dict={keep_prob: 0.5})``, ``train_step.run(feed_dict=...)``, whose fetch is a
    ``minimize`` or ``apply_gradients`` result); None when there is none or more than one."""
    found = ctx.ev.lookup(name.value, scope, order)
    if not isinstance(found, Binding) or not isinstance(found.value, cst.Call):
        return None
    if ctx.op(found.value) != "placeholder":
        return None
    values = set()
    for site in ctx.info.calls:
        fed = _training_feed_dict(ctx, site.node, site.scope, site.order)
        if fed is None:
            continue
        for element in fed.elements:
            if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.Name):
                continue
            if ctx.ev.lookup(element.key.value, site.scope, site.order) is not found:
                continue
            v = ctx.ev.value(element.value, site.scope, site.order).const
            if v is None:
                return None
            values.add(float(v))
    return values.pop() if len(values) == 1 else None


def _training_feed_dict(ctx: Context, call: cst.Call, scope: Scope, order: int) -> cst.Dict | None:
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "run":
        return None
    positional = [a.value for a in call.args if a.keyword is None]
    fed = ctx.arg(call, -1, "feed_dict")
    if positional and _trains(ctx, positional[0], scope, order):  # sess.run(train_step, feed)
        fed = fed if fed is not None else (positional[1] if len(positional) > 1 else None)
    elif _trains(ctx, func.value, scope, order):  # train_step.run(feed_dict=...)
        fed = fed if fed is not None else (positional[0] if positional else None)
    else:
        return None
    if isinstance(fed, cst.Name):
        bound = ctx.ev.lookup(fed.value, scope, order)
        fed = bound.value if isinstance(bound, Binding) else None
    return fed if isinstance(fed, cst.Dict) else None


def _trains(ctx: Context, node: cst.BaseExpression, scope: Scope, order: int) -> bool:
    """Is ``node`` (or an item of a fetched list) an optimizer's update op?"""
    if isinstance(node, (cst.List, cst.Tuple)):
        return any(_trains(ctx, e.value, scope, order) for e in node.elements)
    if isinstance(node, cst.Name):
        found = ctx.ev.lookup(node.value, scope, order)
        node = found.value if isinstance(found, Binding) and found.value is not None else node
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in ("minimize", "apply_gradients")
    )


# ------------------------------------------------------------------ Keras layers


def conv_layer(ctx: Context, layer: cst.Call, scope: Scope, order: int, num) -> dict | None:
    """``Conv2D(filters, kernel_size, strides=, padding=, activation=)`` as plain data
    (``{"conv": {...}, ...}`` with a Dense layer's keys), or ``Conv1D`` over a sequence's steps
    (``{"conv1d": {...}, ...}``); None for another layer or one the slice does not read."""
    kind = _keras_layer(ctx, layer)
    if ctx.op(layer) != "conv_layer" or kind not in _CONV_LAYERS | _CONV1D_LAYERS:
        return None
    if not _neutral(ctx, layer, _CONV_KEYWORDS, scope, order, num):
        return None
    if len([a for a in layer.args if a.keyword is None]) > 4:
        return None
    one = kind in _CONV1D_LAYERS
    filters = num(ctx.arg(layer, 0, "filters"), scope, order)
    if one:
        size = ctx.arg(layer, 1, "kernel_size")
        kernel = _literal_ints(size, scope, order, num) if size is not None else None
        given = ctx.arg(layer, 2, "strides")
        strides = [1] if given is None else _literal_ints(given, scope, order, num)
        kernel, strides = (v if v is not None and len(v) == 1 else None for v in (kernel, strides))
    else:
        kernel = spatial(ctx, ctx.arg(layer, 1, "kernel_size"), scope, order, num)
        strides = spatial(ctx, ctx.arg(layer, 2, "strides"), scope, order, num, [1, 1])
    padding = _padding(ctx.arg(layer, 3, "padding"))
    act = ctx.arg(layer, -1, "activation")
    activation = None
    if isinstance(act, cst.SimpleString):
        activation = str(act.evaluated_value)
    elif act is not None and not (isinstance(act, cst.Name) and act.value == "None"):
        return None
    init = keras_initializer(ctx, ctx.arg(layer, -1, "kernel_initializer"), scope, order, num)
    bias = ctx.arg(layer, -1, "bias_initializer")  # Keras's zeros (other starts: not read yet)
    if init is None or (
        bias is not None
        and not (isinstance(bias, cst.SimpleString) and bias.evaluated_value == "zeros")
    ):
        return None
    use_bias = ctx.arg(layer, -1, "use_bias")
    if None in (filters, kernel, strides, padding) or (
        activation not in (None, "linear") and not _traceable(str(activation))
    ):
        return None
    assert filters is not None and kernel is not None
    geometry = {"filters": int(filters), "kernel": kernel, "strides": strides, "padding": padding}
    return {
        "conv1d" if one else "conv": geometry,
        "activation": activation,
        "kernel_initializer": init.pop("init"),
        "kernel_params": init,
        "use_bias": not (isinstance(use_bias, cst.Name) and use_bias.value == "False"),
        "bias": {"init": "zeros"},
    }


def pool_layer(ctx: Context, layer: cst.Call, scope: Scope, order: int, num) -> dict | None:
    """``MaxPooling2D(pool_size=(2, 2), strides=None, padding="valid")`` (or the average one)
    as ``{"pool2d": {...}}``, or None."""
    kind = _POOL_LAYERS.get(_keras_layer(ctx, layer))
    read = frozenset({"pool_size", "strides", "padding", "input_shape"})
    if kind is None or not _neutral(ctx, layer, read, scope, order, num):
        return None
    window = spatial(ctx, ctx.arg(layer, 0, "pool_size"), scope, order, num, [2, 2])
    strides = spatial(ctx, ctx.arg(layer, 1, "strides"), scope, order, num, window)
    padding = _padding(ctx.arg(layer, 2, "padding"))
    if window is None or strides is None or padding is None:
        return None
    return {"pool2d": {"pooling": kind, "window": window, "strides": strides, "padding": padding}}


def flatten_layer(ctx: Context, layer: cst.Call) -> dict | None:
    """A ``Flatten()`` of a functional chain: its width is the image shape's, tracked where
    the stack is unrolled (``image_step``)."""
    return {"flatten": None} if _keras_layer(ctx, layer) == "Flatten" and not layer.args else None


def image_shape(layers: list[dict], out: dict, data: dict[str, dict]) -> list[int] | None:
    """The [h, w, channels] of the images a stack that convolves starts from: its declared
    ``input_shape``, else the shape of the data it is called on (its recipe's)."""
    if not any("conv" in layer or "pool2d" in layer for layer in layers):
        return None
    declared = layers[0].get("input_shape")
    if declared and len(declared) == 3 and None not in declared:
        return [int(d) for d in declared]
    shape = data_shape(data.get(str(out.get("name")))) if out.get("k") == "input" else None
    return [int(d) for d in shape[1:]] if shape and len(shape) == 4 else None


def _extent(size: int, window: int, stride: int, padding: str) -> int:
    if padding == "SAME":
        return math.ceil(size / stride)
    return math.ceil((size - window + 1) / stride)


def image_step(
    ps: ProgramSlicer, at: str, layer: dict, out: dict, shape: list[int]
) -> tuple[dict, list[int] | None, int] | None:
    """``out`` through one layer of a convolving stack, the image shape after it (None once
    flattened) and its last axis's width; None for a layer that does not take images here (a
    Dense on the images: Keras's reads their last axis, not written yet) or an empty output."""
    h, w, channels = shape
    if "flatten" in layer:
        width = h * w * channels
        dims = {"k": "tuple", "items": [{"k": "const", "v": -1}, {"k": "const", "v": width}]}
        return {"k": "call", "op": "reshape", "args": [out, dims], "kw": {}}, None, width
    if "conv" not in layer and "pool2d" not in layer:
        return None
    if "pool2d" in layer:
        pool = layer["pool2d"]
        (wh, ww), (sh, sw) = pool["window"], pool["strides"]
        shape = [_extent(h, wh, sh, pool["padding"]), _extent(w, ww, sw, pool["padding"]), channels]
        out = pooled(out, pool["pooling"], pool["window"], pool["strides"], pool["padding"])
        return (out, shape, channels) if min(shape) > 0 else None
    conv = layer["conv"]
    (kh, kw), (sh, sw) = conv["kernel"], conv["strides"]
    shape = [_extent(h, kh, sh, conv["padding"]), _extent(w, kw, sw, conv["padding"])]
    if min(shape) <= 0:
        return None
    kernel, bias = f"{at}.kernel", f"{at}.bias"
    ps.weights[kernel] = {
        "init": layer["kernel_initializer"],
        **layer.get("kernel_params", {}),
        "shape": [kh, kw, channels, conv["filters"]],
    }
    args: list[Any] = [out, {"k": "input", "name": kernel}, _pair(conv["strides"])]
    out = {"k": "call", "op": "conv2d_nhwc", "args": [*args, {"k": "str", "v": conv["padding"]}],
           "kw": {}}  # fmt: skip
    if layer["use_bias"]:
        ps.weights[bias] = {**layer["bias"], "shape": [conv["filters"]]}
        out = {"k": "bin", "op": "+", "l": out, "r": {"k": "input", "name": bias}}
    if layer["activation"] not in (None, "linear"):
        out = {"k": "call", "op": layer["activation"], "args": [out], "kw": {}}
    return out, [*shape, conv["filters"]], conv["filters"]
