"""TNL50x: training configuration: learning rate, clipping, logits vs probabilities, data.

The learning-rate rules (TNL501, TNL505, TNL506) read a plain, JSON-able training spec from the
source (optimizer class and hyper-parameters, output activation, loss form, layer shapes, data
scale, batch size) and hand it to the verifier as the probe: ``recipe`` names the simulation
in ``tfnumlint/verify/training.py`` that replays the spec with the user's optimizer.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from .. import ops
from ..analysis.context import Context, Hit
from ..analysis.module import Site
from ..analysis.names import PROBABILITY_LOSSES
from ..optimizers import ADAPTIVE, OPTIMIZERS
from .common import fmt, split_eps
from .datascale import DataScale, curvature, data_scale, resolve
from .registry import rule
from .training_loss import compiled_loss

_ALL_OPTIMIZERS = frozenset({f"optimizer:{f}" for f in OPTIMIZERS})
_CLIP_KWARGS = frozenset({"clipnorm", "clipvalue", "global_clipnorm"})
SATURATING = ops.PROBABILITY  # a probability saturates at 0 and 1
# Below this, an SGD learning rate on features of unknown scale is not worth a finding: it
# diverges only once the features' RMS exceeds 1 / sqrt(lr) > 3.2.
UNKNOWN_SCALE_LR = 0.1
SQUARED_LOSS_NAMES = frozenset({"mse", "mean_squared_error", "MeanSquaredError", "MSE"})


def learning_rate(ctx: Context, call: cst.Call, site: Site) -> float | None:
    node = ctx.arg(call, 0, "learning_rate", "lr")
    if node is None:  # the Keras defaults: 0.01 for SGD, 0.001 for every other optimizer
        return 0.01 if ctx.op(call) == "optimizer:sgd" else 0.001
    return ctx.val(node, site).const


def _family(ctx: Context, call: cst.Call) -> str:
    """``sgd`` for a call whose canonical op is ``optimizer:sgd``; empty for any other call."""
    _, _, family = (ctx.op(call) or "").partition(":")
    return family


def optimizer_spec(ctx: Context, call: cst.Call, site: Site) -> dict:
    """The optimizer as the verifier rebuilds it: class, learning rate, momentum, clipping."""
    family = _family(ctx, call)
    name = ctx.info.imports.resolve(call.func) or ""
    momentum = None
    if family == "sgd" and not name.endswith("GradientDescentOptimizer"):
        node = ctx.arg(call, 1, "momentum")
        momentum = ctx.val(node, site).const if node is not None else None
    clip = ctx.arg(call, -1, "clipnorm", "global_clipnorm")
    return {
        "optimizer": family,
        "tf1": name.startswith("tf.train."),
        "learning_rate": learning_rate(ctx, call, site),
        "momentum": momentum or 0.0,
        "clipnorm": ctx.val(clip, site).const if clip is not None else None,
    }


def _kwargs_true(ctx: Context, call: cst.Call) -> set[str]:
    return {
        a.keyword.value
        for a in call.args
        if a.keyword is not None and isinstance(a.value, cst.Name) and a.value.value == "True"
    }


def _int_literal(ctx: Context, node: cst.BaseExpression | None, site: Site) -> int | None:
    if node is None:
        return None
    v = ctx.val(node, site).const
    return int(v) if v is not None and v == int(v) and v > 0 else None


# -- TNL501: the output layer and the loss ------------------------------------------------


@dataclass(frozen=True)
class OutputLayer:
    """A sigmoid/softmax output layer; its shape when the source shows it."""

    activation: str
    units: int | None
    fan_in: int | None
    below: Below | None = None  # the layer that computes this layer's input, when visible
    bias: bool = True


@dataclass(frozen=True)
class Below:
    """The hidden layer under the output layer: its input width and activation.  A model whose
    hidden layer reads as many inputs as the output has units is simulated as the autoencoder it
    usually is (the targets are its inputs)."""

    fan_in: int | None
    activation: str | None


@dataclass(frozen=True)
class LossForm:
    """How a hand-written probability-space loss guards its log: ``log(p + eps)``, a clip to
    [eps, 1 - eps], or nothing at all."""

    form: str  # log_eps | clip | log
    eps: float | None


def output_layer(ctx: Context) -> OutputLayer | None:
    """The first sigmoid/softmax output layer in the module (a Dense activation or an op)."""

    def compute() -> OutputLayer | None:
        for s in ctx.info.calls:
            op = ctx.op(s.node)
            if op == "dense":
                act = _dense_activation(ctx, s.node)
                if act in SATURATING:
                    units = _int_literal(ctx, ctx.arg(s.node, 0, "units"), s)
                    fan_in, below = _dense_input(ctx, s)
                    use_bias = ctx.arg(s.node, -1, "use_bias")
                    no_bias = isinstance(use_bias, cst.Name) and use_bias.value == "False"
                    return OutputLayer(act, units, fan_in, below, not no_bias)
            elif op in SATURATING:
                units, fan_in, below, bias = _matmul_shape(ctx, s)
                return OutputLayer(op, units, fan_in, below, bias)
        return None

    return ctx.fact("output_layer", compute)


def _dense_activation(ctx: Context, call: cst.Call) -> str | None:
    act = ctx.arg(call, 1, "activation")
    if isinstance(act, cst.SimpleString):
        return str(act.evaluated_value)
    if act is not None:
        return ctx.info.imports.op(act)
    return None


def _dense_input(ctx: Context, site: Site, depth: int = 0) -> tuple[int | None, Below | None]:
    """(width, layer below) feeding a Dense layer: the previous layer of a Sequential list,
    the layer or Input it is called on in the functional API."""
    dense = site.node
    for s in ctx.info.calls:
        if s.node.func is dense and s.node.args:  # Dense(...)(h)
            return _width(ctx, s.node.args[0].value, s, depth)
        if ctx.op(s.node) == "sequential" and s.node.args:
            layers = s.node.args[0].value
            if isinstance(layers, cst.List):
                items = [e.value for e in layers.elements]
                for i, item in enumerate(items):
                    if item is dense and i > 0:
                        return _width(ctx, items[i - 1], s, depth, items[: i - 1])
    return None, None


def _width(ctx: Context, node: cst.BaseExpression, site: Site, depth: int = 0,
           earlier: list[cst.BaseExpression] | None = None) -> tuple[int | None, Below | None]:  # fmt: skip
    """The width a layer outputs and, one level down, what feeds it."""
    node, _, _ = resolve(ctx, node, site.scope, site.order)
    if not isinstance(node, cst.Call):
        return None, None
    layer = node.func if isinstance(node.func, cst.Call) else node
    op = ctx.op(layer)
    if op == "dense":
        width = _int_literal(ctx, ctx.arg(layer, 0, "units"), site)
        if depth > 0:
            return width, None
        if earlier:  # Sequential: the layer before, or the Input that starts the list
            fan_in, _ = _width(ctx, earlier[-1], site, depth + 1)
        elif isinstance(node.func, cst.Call) and node.args:
            fan_in, _ = _width(ctx, node.args[0].value, site, depth + 1)
        else:
            fan_in = None
        return width, Below(fan_in, _dense_activation(ctx, layer))
    if op == "keras_input":
        shape = ctx.arg(layer, 0, "shape")
        if isinstance(shape, (cst.Tuple, cst.List)) and shape.elements:
            return _int_literal(ctx, shape.elements[-1].value, site), None
    return None, None


def _matmul_shape(ctx: Context, site: Site) -> tuple[int | None, int | None, Below | None, bool]:
    """(units, fan-in, layer below, bias) of ``act(h @ W + b)`` when ``W`` is created with a
    literal shape; the layer below when ``h = act(x @ W1)`` is written the same way."""
    if not site.node.args:
        return None, None, None, False
    units, fan_in, below_node, bias, at = _affine(ctx, site.node.args[0].value, site)
    below = None
    if below_node is not None and at is not None:
        node, _, _ = resolve(ctx, below_node, at.scope, at.order)
        if isinstance(node, cst.Call) and node.args:
            act = ctx.op(node)
            _, width, _, _, _ = _affine(ctx, node.args[0].value, at)
            below = Below(width, act)
    return units, fan_in, below, bias


def _affine(ctx: Context, expr: cst.BaseExpression, site: Site):
    """(units, fan-in, input expression, bias, site) of ``h @ W (+ b)`` / ``matmul(h, W)``."""
    none = (None, None, None, False, None)
    node, scope, order = resolve(ctx, expr, site.scope, site.order)
    bias = isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add)
    if bias:
        node, scope, order = resolve(ctx, node.left, scope, order)
    weight = source = None
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
        source, weight = node.left, node.right
    elif isinstance(node, cst.Call) and ctx.op(node) == "matmul" and len(node.args) >= 2:
        source, weight = node.args[0].value, node.args[1].value
    if weight is None:
        return none
    w, _, _ = resolve(ctx, weight, scope, order)
    if not (isinstance(w, cst.Call) and ctx.op(w) == "variable" and w.args):
        return none
    init = w.args[0].value
    shape = ctx.arg(init, 0, "shape") if isinstance(init, cst.Call) else None
    if isinstance(shape, (cst.List, cst.Tuple)) and len(shape.elements) == 2:
        fan_in, units = (_int_literal(ctx, e.value, site) for e in shape.elements)
        return units, fan_in, source, bias, Site(node, scope, site.statement, order, site.top)
    return none


def probability_loss(ctx: Context) -> LossForm | None:
    """A hand-written log of a probability: it cannot recover from saturation.

    Keras's built-in ``binary_crossentropy`` / ``categorical_crossentropy`` (from_logits=False)
    on a sigmoid/softmax output is not one: Keras recovers the logits (``_keras_logits`` in
    Keras 3, the Sigmoid/Softmax op's input in tf.keras), so it behaves like the fused loss.
    """

    def compute() -> LossForm | None:
        for s in ctx.info.calls:
            if ctx.op(s.node) != "log" or not s.node.args:
                continue
            arg = s.node.args[0].value
            rest, eps = split_eps(ctx, arg, s)
            v = ctx.val(rest, s)
            if not _probability_range(v):
                continue
            if eps is not None:
                return LossForm("log_eps", eps)
            if v.lo > 0:
                return LossForm("clip", v.lo)
            return LossForm("log", None)
        return None

    return ctx.fact("probability_loss", compute)


def _probability_range(v) -> bool:
    return v.prob or v.kind in SATURATING or (v.lo >= 0.0 and v.hi <= 1.0 and v.lo < v.hi)


@rule("TNL501", ops=_ALL_OPTIMIZERS, host_values=True)
def high_lr_saturating_output(site: Site[cst.Call], ctx: Context):
    call = site.node
    family = _family(ctx, call)
    lr = learning_rate(ctx, call, site)
    threshold = ctx.settings.lr_thresholds.get(family)
    if lr is None or threshold is None or lr <= threshold:
        return
    out, loss = output_layer(ctx), probability_loss(ctx)
    if out is None or loss is None:
        return
    eps = fmt(loss.eps or 0)
    guard = {
        "log_eps": f"log(p + {eps})",
        "clip": f"log(clip(p, {eps}, 1 - {eps}))",
        "log": "log(p)",
    }
    yield Hit(
        call,
        f"learning rate {fmt(lr)} is above {fmt(threshold)} for {family} with {out.activation} "
        f"outputs and a hand-written {guard[loss.form]} loss: large steps push the logits into "
        "saturation, where that loss is stuck with a zero (or NaN) gradient; use linear outputs "
        "with a from_logits / *_with_logits loss, or a lower learning rate",
        site,
        {
            "kind": "train",
            "recipe": "saturation",
            **optimizer_spec(ctx, call, site),
            "output": out.activation,
            "units": out.units,
            "fan_in": out.fan_in,
            "bias": out.bias,
            "below": {"fan_in": out.below.fan_in, "activation": out.below.activation}
            if out.below
            else None,
            "loss": {"form": loss.form, "eps": loss.eps},
            "loss_code": compiled_loss(ctx),
        },
    )


# -- TNL502 --------------------------------------------------------------------------------


def _has_clipping(ctx: Context, call: cst.Call) -> bool:
    if any(a.keyword is not None and a.keyword.value in _CLIP_KWARGS for a in call.args):
        return True
    return bool(
        ctx.fact(
            "clips_gradients",
            lambda: any(
                ctx.op(s.node) in ("clip_by_global_norm", "clip_by_norm") for s in ctx.info.calls
            ),
        )
    )


@rule("TNL502", ops={f"optimizer:{f}" for f in ADAPTIVE}, host_values=True)
def no_gradient_clipping(site: Site[cst.Call], ctx: Context):
    call = site.node
    family = _family(ctx, call)
    lr = learning_rate(ctx, call, site)
    threshold = ctx.settings.lr_thresholds.get(family)
    if lr is None or threshold is None or lr <= threshold or _has_clipping(ctx, call):
        return
    out = output_layer(ctx)
    loss = probability_loss(ctx)
    stack = dense_stack(ctx)
    yield Hit(
        call,
        f"{family} at learning rate {fmt(lr)} with no gradient clipping: one exploding gradient "
        "moves every weight by about lr per step in its sign, nothing bounds it; pass clipnorm= "
        "or clip with tf.clip_by_global_norm",
        site,
        {
            "kind": "train",
            "recipe": "clipping",
            **optimizer_spec(ctx, call, site),
            "output": out.activation if out else None,
            "loss": {"form": loss.form, "eps": loss.eps} if loss else None,
            "loss_code": compiled_loss(ctx),
            "stack": stack,
        },
    )


def dense_stack(ctx: Context) -> dict | None:
    """The first ``Sequential([...])`` of Dense layers with literal widths: its input width and
    its layers as [units, activation], for the gradient-norm simulation."""

    def compute() -> dict | None:
        for s in ctx.info.calls:
            if ctx.op(s.node) != "sequential" or not s.node.args:
                continue
            items = s.node.args[0].value
            if not isinstance(items, cst.List):
                continue
            width, layers = None, []
            for el in items.elements:
                node = el.value
                if not isinstance(node, cst.Call):
                    return None
                op = ctx.op(node)
                if op == "keras_input":
                    width, _ = _width(ctx, node, s, depth=1)
                elif op == "dense":
                    units = _int_literal(ctx, ctx.arg(node, 0, "units"), s)
                    if units is None:
                        return None
                    layers.append([units, _dense_activation(ctx, node) or "linear"])
                else:
                    return None  # a layer the simulation would not rebuild
            return {"inputs": width, "layers": layers} if layers else None
        return None

    return ctx.fact("dense_stack", compute)


# -- TNL505: plain / momentum SGD on features of a known scale ------------------------------


def squared_loss(ctx: Context) -> bool:
    """The module trains on a squared error (hand-written, a Keras loss or a TF1 loss)."""

    def compute() -> bool:
        for s in ctx.info.calls:
            op = ctx.op(s.node)
            if op == "squared_difference" or (
                op == "square" and s.node.args and _residual(ctx, s.node.args[0].value, s)
            ):
                return True
            name = ctx.info.imports.resolve(s.node.func) or ""
            if name.rsplit(".", 1)[-1] in SQUARED_LOSS_NAMES:
                return True
            func = s.node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "compile":
                loss = ctx.arg(s.node, 1, "loss")
                if (
                    isinstance(loss, cst.SimpleString)
                    and loss.evaluated_value in SQUARED_LOSS_NAMES
                ):
                    return True
        for s in ctx.info.binops:
            node = s.node
            if (
                isinstance(node.operator, cst.Power)
                and ctx.val(node.right, s).const == 2
                and _residual(ctx, node.left, s)
            ):
                return True
        return False

    return bool(ctx.fact("squared_loss", compute))


def _residual(ctx: Context, node: cst.BaseExpression, site: Site) -> bool:
    """``pred - y``: a squared residual is a regression loss; ``square(w)`` is a penalty."""
    node, _, _ = resolve(ctx, node, site.scope, site.order)
    while isinstance(node, cst.Call) and ctx.op(node) in ("cast", "identity") and node.args:
        node = node.args[0].value
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
        return True
    return isinstance(node, cst.Call) and ctx.op(node) == "subtract"


def _is_variable(ctx: Context, node: cst.BaseExpression, site: Site) -> bool:
    target, _, _ = resolve(ctx, node, site.scope, site.order)
    return isinstance(target, cst.Call) and ctx.op(target) == "variable"


def _model_inputs(ctx: Context) -> Iterator[tuple[cst.BaseExpression, Site]]:
    """Expressions multiplied by a tf.Variable: ``w * x``, ``x @ W``, ``tf.matmul(x, W)``."""
    for s in ctx.info.binops:
        node = s.node
        if isinstance(node.operator, (cst.Multiply, cst.MatrixMultiply)):
            if _is_variable(ctx, node.left, s):
                yield node.right, s
            elif _is_variable(ctx, node.right, s):
                yield node.left, s
    for s in ctx.info.calls:
        if ctx.op(s.node) == "matmul" and len(s.node.args) >= 2:
            a, b = s.node.args[0].value, s.node.args[1].value
            if _is_variable(ctx, b, s):
                yield a, s
            elif _is_variable(ctx, a, s):
                yield b, s


def _feeds(ctx: Context) -> Iterator[tuple[cst.BaseExpression, cst.BaseExpression, Site]]:
    """(placeholder, value, site) for every ``feed_dict={X: value}`` entry."""
    for s in ctx.info.calls:
        feed = ctx.arg(s.node, -1, "feed_dict")
        if isinstance(feed, cst.Dict):
            for el in feed.elements:
                if isinstance(el, cst.DictElement):
                    yield el.key, el.value, s


def feature_data(ctx: Context) -> list[tuple[DataScale, Site]]:
    """What the source shows about the training features: ``model.fit(x, ...)``, the value
    fed to the placeholder a variable multiplies, or an array a variable multiplies."""

    def compute() -> list[tuple[DataScale, Site]]:
        out: list[tuple[DataScale, Site]] = []
        for s in ctx.info.calls:
            func = s.node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "fit":
                x = ctx.arg(s.node, 0, "x")
                if x is not None:
                    out.append((data_scale(ctx, x, s), s))
        feeds = list(_feeds(ctx))
        for expr, s in _model_inputs(ctx):
            target, _, _ = resolve(ctx, expr, s.scope, s.order)
            if isinstance(target, cst.Call) and ctx.op(target) == "placeholder":
                name = ctx.code(expr)
                for key, value, fs in feeds:
                    if ctx.code(key) == name:
                        out.append((data_scale(ctx, value, fs), fs))
            elif not isinstance(target, cst.Param) and ctx.op(target) != "variable":
                out.append((data_scale(ctx, expr, s), s))
        return out

    return ctx.fact("feature_data", compute)


def _replayable(ctx: Context) -> bool:
    """Features made by NumPy code the training rung replays (``analysis/datagen.py``): their
    scale is not literal, but the verifier trains on the program's own data."""
    from ..analysis.datagen import fed_data

    def compute() -> bool:
        for _key, value, s in _feeds(ctx):
            if fed_data(ctx.ev, value, s.scope, s.order) is not None:
                return True
        for s in ctx.info.calls:
            func = s.node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "fit":
                x = ctx.arg(s.node, 0, "x")
                if x is not None and fed_data(ctx.ev, x, s.scope, s.order) is not None:
                    return True
        return False

    return bool(ctx.fact("replayable_features", compute))


def _known_first(data: list[tuple[DataScale, Site]]) -> tuple[DataScale, Site] | None:
    for status in ("literal", "unknown"):
        for d, s in data:
            if d.status == status:
                return d, s
    return None


@rule("TNL505", ops={"optimizer:sgd"})
def sgd_diverges_on_raw_features(site: Site[cst.Call], ctx: Context):
    call = site.node
    opt = optimizer_spec(ctx, call, site)
    lr = opt["learning_rate"]
    if lr is None or lr <= 0 or not squared_loss(ctx):
        return
    found = _known_first(feature_data(ctx))
    if found is None:
        return
    data, _ = found
    momentum = opt["momentum"]
    what = "SGD" if not momentum else f"SGD with momentum {fmt(momentum)}"
    spec = {"kind": "train", "recipe": "divergence", **opt, "data": data.name}
    if data.scale is not None:
        scale = data.scale
        lam = curvature(scale)
        limit = 2 * (1 + momentum) / lam
        if lr <= limit:
            return
        yield Hit(
            call,
            f"{what} at lr {fmt(lr)} on `{data.name}` = {scale.text} (RMS {fmt(scale.rms)}) with a "
            f"squared-error loss: the loss curvature is about 2·mean(x²) = {fmt(lam)}, so any lr "
            f"above {fmt(limit)} grows the weights geometrically to inf; normalise the features or "
            f"use a learning rate below {fmt(limit)}",
            site,
            {**spec, "features": scale.to_spec(), "curvature": lam, "limit": limit},
        )
        return
    replayed = data.status == "unknown" and _replayable(ctx)
    if (lr < UNKNOWN_SCALE_LR or not data.loaded) and not replayed:
        return  # prepared elsewhere, or not raw data from a file or code the verifier replays
    rms_limit = math.sqrt((1 + momentum) / lr)
    yield Hit(
        call,
        f"{what} at lr {fmt(lr)} with a squared-error loss diverges once the features' RMS "
        f"exceeds {fmt(rms_limit)} (the curvature is about 2·mean(x²)); no normalisation of "
        f"`{data.name}` is visible",
        site,
        {**spec, "features": None, "rms_limit": rms_limit},
    )


# -- TNL506: a loss or an update summed over the batch, with SGD ----------------------------


def batch_size(ctx: Context) -> int | None:
    """The batch size when the source states it: ``.batch(200)``, ``next_batch(200)``,
    ``batch_size=200``, or the rows of a literal array fed to the model."""

    def compute() -> int | None:
        for s in ctx.info.calls:
            func = s.node.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("batch", "next_batch"):
                n = _int_literal(ctx, ctx.arg(s.node, 0, "batch_size"), s)
                if n:
                    return n
            kw = next(
                (a.value for a in s.node.args if a.keyword and a.keyword.value == "batch_size"),
                None,
            )
            n = _int_literal(ctx, kw, s)
            if n:
                return n
        for d, _ in feature_data(ctx):
            if d.scale is not None and d.scale.rows and d.scale.rows > 1:
                return d.scale.rows
        return None

    return ctx.fact("batch_size", compute)


def _sgd_receiver(ctx: Context, node: cst.BaseExpression, site: Site) -> cst.Call | None:
    target, _, _ = resolve(ctx, node, site.scope, site.order)
    if isinstance(target, cst.Call) and ctx.op(target) == "optimizer:sgd":
        return target
    return None


def _strip_scaling(ctx: Context, node: cst.BaseExpression, site: Site) -> cst.BaseExpression:
    """``-x``, ``c * x``, ``x * c``: the summed term inside a sign or a constant factor."""
    while True:
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            node = node.expression
        elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
            if ctx.val(node.left, site).const is not None:
                node = node.right
            elif ctx.val(node.right, site).const is not None:
                node = node.left
            else:
                return node
        else:
            return node


def _sums_over_batch(ctx: Context, call: cst.Call, site: Site) -> bool:
    if ctx.op(call) != "reduce_sum":
        return False
    axis = ctx.arg(call, 1, "axis", "reduction_indices")
    if axis is None or (isinstance(axis, cst.Name) and axis.value == "None"):
        return True
    if isinstance(axis, (cst.List, cst.Tuple)):
        return any(ctx.val(e.value, site).const == 0 for e in axis.elements)
    return ctx.val(axis, site).const == 0


def _loss_form(ctx: Context, node: cst.BaseExpression, site: Site) -> str:
    """What the summed loss computes, for the simulation."""
    ops = set()
    for sub in _walk_calls(node):
        op = ctx.op(sub)
        if op == "log" and sub.args:
            v = ctx.val(sub.args[0].value, site)
            ops.add("softmax_log" if v.kind == "softmax" or v.prob else "log")
        elif op:
            ops.add(op)
    for form in ("softmax_xent", "sigmoid_xent", "softmax_log"):
        if form in ops:
            return form
    if ops & {"square", "squared_difference"}:
        return "squared"
    return "softmax_log" if "log" in ops else "unknown"


def _walk_calls(node: cst.CSTNode) -> Iterator[cst.Call]:
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Call):
            yield n
        stack.extend(n.children)


@rule("TNL506", methods={"minimize"})
def loss_summed_over_batch(site: Site[cst.Call], ctx: Context):
    """TF1 ``sgd.minimize(loss)``."""
    call = site.node
    if not isinstance(call.func, cst.Attribute):
        return
    opt_call = _sgd_receiver(ctx, call.func.value, site)
    loss = ctx.arg(call, 0, "loss")
    if opt_call is not None and loss is not None:
        yield from _summed_loss(ctx, site, loss, optimizer_spec(ctx, opt_call, site))


@rule("TNL506", methods={"compile"})
def compiled_loss_summed_over_batch(site: Site[cst.Call], ctx: Context):
    """Keras ``compile(optimizer=SGD(...), loss=fn)`` where ``fn`` returns a batch sum: Keras
    averages the per-sample losses, and a scalar sum has nothing left to average."""
    call = site.node
    optimizer, loss = ctx.arg(call, 0, "optimizer"), ctx.arg(call, 1, "loss")
    if optimizer is None or loss is None:
        return
    if isinstance(optimizer, cst.SimpleString) and optimizer.evaluated_value == "sgd":
        opt = {"optimizer": "sgd", "tf1": False, "learning_rate": 0.01, "momentum": 0.0,
               "clipnorm": None}  # fmt: skip
    else:
        opt_call = _sgd_receiver(ctx, optimizer, site)
        if opt_call is None:
            return
        opt = optimizer_spec(ctx, opt_call, site)
    body = _function_result(ctx, loss, site)
    if body is not None:
        yield from _summed_loss(ctx, site, body[0], opt, body[1], report=loss)


@rule("TNL506", methods={"gradient"})
def taped_loss_summed_over_batch(site: Site[cst.Call], ctx: Context):
    """TF2 ``tape.gradient(loss, ...)`` in a module whose only optimizer is SGD."""
    call = site.node
    loss = ctx.arg(call, 0, "target")
    optimizers = [s for s in ctx.info.calls if (ctx.op(s.node) or "").startswith("optimizer:")]
    if loss is None or len(optimizers) != 1 or ctx.op(optimizers[0].node) != "optimizer:sgd":
        return
    opt = optimizer_spec(ctx, optimizers[0].node, optimizers[0])
    yield from _summed_loss(ctx, site, loss, opt)


def _function_result(ctx: Context, loss: cst.BaseExpression, site: Site):
    """(returned expression, its site) of a loss function defined in this module or a lambda."""
    if isinstance(loss, cst.Lambda):
        return loss.body, site
    if isinstance(loss, cst.Name):
        scope = ctx.info.functions.get(loss.value)
        if scope is not None and scope.returns:
            order, expr = scope.returns[-1]
            return expr, Site(expr, scope, site.statement, order, site.top)
    return None


def _summed_loss(ctx: Context, site: Site, loss: cst.BaseExpression, opt: dict,
                 where: Site | None = None, report: cst.CSTNode | None = None):  # fmt: skip
    """A finding (on ``report``, else the call) when ``loss`` is a sum over a literal batch
    and ``opt`` is SGD."""
    where = where or site
    node, scope, order = resolve(ctx, loss, where.scope, where.order)
    at = Site(node, scope, where.statement, order, where.top)
    term = _strip_scaling(ctx, node, at)
    if isinstance(term, cst.Call) and isinstance(term.func, cst.Name) and ctx.op(term) is None:
        body = _function_result(ctx, term.func, at)  # loss = squared_error(y, f(x)): its body
        if body is not None:
            node, scope, order = resolve(ctx, body[0], body[1].scope, body[1].order)
            at = Site(node, scope, where.statement, order, where.top)
            term = _strip_scaling(ctx, node, at)
    if not (isinstance(term, cst.Call) and _sums_over_batch(ctx, term, at)):
        return
    batch = batch_size(ctx)
    lr = opt["learning_rate"]
    if not batch or batch < 2 or lr is None:
        return
    found = _known_first(feature_data(ctx))
    scale = found[0].scale if found else None
    own = next((s for s in ctx.info.calls if s.node is term), site)  # the sum's own site
    yield Hit(
        report or term,  # the sum itself
        f"the loss is summed over the batch (`{_short(ctx.code(term))}`) and trained with SGD at lr "
        f"{fmt(lr)}: each step is lr x batch = {fmt(lr)} x {batch} = {fmt(lr * batch)} times the "
        f"mean gradient; use tf.reduce_mean (or keep the sum with lr {fmt(lr / batch)})",
        site if report is not None else own,
        {
            "kind": "train",
            "recipe": "summed",
            **opt,
            "batch": batch,
            "loss": _loss_form(ctx, term, at),
            "features": scale.to_spec() if scale else None,
            "feature_count": _placeholder_width(ctx) or (scale.cols if scale else None),
        },
    )


def _short(code: str, width: int = 50) -> str:
    code = " ".join(code.split())
    return code if len(code) <= width else code[: width - 3] + "..."


def _placeholder_width(ctx: Context) -> int | None:
    for s in ctx.info.calls:
        if ctx.op(s.node) == "placeholder":
            shape = ctx.arg(s.node, 1, "shape")
            if isinstance(shape, (cst.List, cst.Tuple)) and len(shape.elements) == 2:
                return _int_literal(ctx, shape.elements[-1].value, s)
    return None


def _batch_contraction(ctx: Context, node: cst.BaseExpression, site: Site) -> bool:
    """A sum over the examples: reduce_sum over axis 0 (or all), or ``matmul(transpose(a), b)``."""
    for sub in _walk_calls(node):
        op = ctx.op(sub)
        if _sums_over_batch(ctx, sub, site):
            return True
        if op == "matmul" and sub.args:
            first = sub.args[0].value
            transposed = isinstance(first, cst.Call) and (
                ctx.info.imports.resolve(first.func) or ""
            ).endswith(".transpose")
            if transposed or "transpose_a" in _kwargs_true(ctx, sub):
                return True
    return False


def _averaged(ctx: Context, node: cst.BaseExpression) -> bool:
    """A mean or a division anywhere in the update: the batch sum is already normalised."""
    for sub in _walk_calls(node):
        if ctx.op(sub) in ("reduce_mean", "divide"):
            return True
    stack: list[cst.CSTNode] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Divide):
            return True
        stack.extend(n.children)
    return False


@rule("TNL506", methods={"assign_add", "assign_sub"})
def update_summed_over_batch(site: Site[cst.Call], ctx: Context):
    call = site.node
    tf_function = ctx.info.imports.resolve(call.func) is not None  # tf.assign_add(var, delta)
    delta = ctx.arg(call, 1 if tf_function else 0, "delta", "value")
    if not isinstance(delta, cst.BinaryOperation) or not isinstance(delta.operator, cst.Multiply):
        return
    lr = ctx.val(delta.left, site).const
    body = delta.right
    if lr is None:
        lr, body = ctx.val(delta.right, site).const, delta.left
    if lr is None or lr <= 0:
        return
    body, scope, order = resolve(ctx, body, site.scope, site.order)
    at = Site(body, scope, site.statement, order, site.top)
    if not _batch_contraction(ctx, body, at) or _averaged(ctx, body):
        return
    batch = batch_size(ctx)
    if not batch or batch < 2:
        return
    yield Hit(
        call,
        f"the hand-written update `{ctx.code(call.func)}(...)` scales a sum over the batch by "
        f"{fmt(lr)}: "
        f"its step is {fmt(lr)} x {batch} = {fmt(lr * batch)} times the per-example average and "
        f"grows with the batch size; divide the sum by the batch size",
        site,
        {
            "kind": "train",
            "recipe": "summed_update",
            "learning_rate": lr,
            "batch": batch,
        },
    )


# -- TNL503, TNL504 --------------------------------------------------------------------------

_XENT = frozenset({"sigmoid_xent", "softmax_xent", "weighted_xent"})


@rule("TNL503", ops=_XENT, host_values=True)
def probabilities_as_logits(site: Site[cst.Call], ctx: Context):
    call = site.node
    logits = ctx.arg(call, 1, "logits")
    if logits is None:
        return
    v = ctx.val(logits, site)
    if v.prob and not v.prob_by_name:
        yield Hit(
            call,
            f"{(ctx.op(call) or '').replace('_xent', '')} cross-entropy *_with_logits receives "
            f"{v.desc}, "
            "a probability: it applies the sigmoid/softmax again, so the loss saturates and "
            "trains on the wrong gradient; pass the pre-activation logits",
            site,
        )


@rule("TNL503", methods={"compile"}, host_values=True)
def compile_mismatch(site: Site[cst.Call], ctx: Context):
    call = site.node
    if not isinstance(call.func, cst.Attribute):
        return
    model = ctx.val(call.func.value, site)
    if model.kind != "model" or model.activation is None:
        return
    loss = ctx.arg(call, 1, "loss")
    if loss is None:
        return
    from_logits = False
    probability_loss = False
    if isinstance(loss, cst.SimpleString):
        probability_loss = loss.evaluated_value in PROBABILITY_LOSSES
    elif isinstance(loss, cst.Call) and (ctx.op(loss) or "").startswith("loss:"):
        probability_loss = True
        from_logits = "from_logits" in _kwargs_true(ctx, loss)
    if not probability_loss:
        return
    if from_logits and model.activation in ops.PROBABILITY:
        yield Hit(
            loss,
            f"from_logits=True on a model whose output layer already applies {model.activation}: "
            "the loss applies it a second time, squashing outputs into [0.5, 0.73] and flattening the gradient",
            site,
        )
    elif not from_logits and model.activation == "linear":
        yield Hit(
            loss,
            "a probability loss (from_logits=False) on a model with a linear output layer: the "
            "logits are clipped to [1e-7, 1 - 1e-7] as if they were probabilities; pass "
            "from_logits=True",
            site,
        )


@rule("TNL504", ops={"dataset"}, methods={"fit"}, host_values=True)
def unchecked_input_data(site: Site[cst.Call], ctx: Context):
    checked = ctx.fact(
        "checks_numerics", lambda: any(ctx.op(s.node) == "check_numerics" for s in ctx.info.calls)
    )
    if checked or not ctx.once("TNL504", ctx.info.module):
        return
    yield Hit(
        site.node,
        "input data reaches training with no NaN/Inf check: one bad record turns the loss NaN "
        "with no hint of where it came from; add tf.debugging.check_numerics (or assert_all_finite) "
        "in the input pipeline",
        site,
    )
