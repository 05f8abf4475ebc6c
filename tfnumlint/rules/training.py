"""TNL501-TNL504: training configuration: a learning rate that saturates the output layer, no
gradient clipping, probabilities passed as logits, unchecked input data.

The learning-rate rules (TNL501, TNL505, TNL506) read a plain, JSON-able training spec from the
source (optimizer class and hyper-parameters, output activation, loss form, layer shapes, data
scale, batch size) and hand it to the verifier as the probe: ``recipe`` names the simulation
in ``tfnumlint/verify/training.py`` that replays the spec with the user's optimizer.

TNL505 (SGD on raw features) is in ``training_sgd.py``, TNL506 (a loss summed over the batch)
in ``training_batch.py``; the optimizer call itself is read by ``analysis/optimizer_calls.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from .. import ops
from ..analysis.context import Context, Hit
from ..analysis.epsilons import split_eps
from ..analysis.module import Site
from ..analysis.names import PROBABILITY_LOSSES
from ..analysis.optimizer_calls import learning_rate, optimizer_family, optimizer_spec
from ..optimizers import ADAPTIVE, OPTIMIZERS
from .common import fmt
from .datascale import resolve
from .graph import Hazard as GraphHazard
from .graph import graph_rule, high_learning_rate, optimizer_text
from .graph import optimizer_spec as graph_optimizer_spec
from .registry import rule
from .training_loss import compiled_loss

_ALL_OPTIMIZERS = frozenset({f"optimizer:{f}" for f in OPTIMIZERS})
_CLIP_KWARGS = frozenset({"clipnorm", "clipvalue", "global_clipnorm"})
SATURATING = ops.PROBABILITY  # a probability saturates at 0 and 1
# Below this, an SGD learning rate on features of unknown scale is not worth a finding: it
# diverges only once the features' RMS exceeds 1 / sqrt(lr) > 3.2.
UNKNOWN_SCALE_LR = 0.1
SQUARED_LOSS_NAMES = frozenset({"mse", "mean_squared_error", "MeanSquaredError", "MSE"})


def kwargs_true(ctx: Context, call: cst.Call) -> set[str]:
    return {
        a.keyword.value
        for a in call.args
        if a.keyword is not None and isinstance(a.value, cst.Name) and a.value.value == "True"
    }


def int_literal(ctx: Context, node: cst.BaseExpression | None, site: Site) -> int | None:
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
                    units = int_literal(ctx, ctx.arg(s.node, 0, "units"), s)
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
        width = int_literal(ctx, ctx.arg(layer, 0, "units"), site)
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
            return int_literal(ctx, shape.elements[-1].value, site), None
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
        fan_in, units = (int_literal(ctx, e.value, site) for e in shape.elements)
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
    family = optimizer_family(ctx, call)
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
            lambda: any(ctx.op(s.node) in ops.NORM_CLIPPING for s in ctx.info.calls),
        )
    )


@rule("TNL502", ops={f"optimizer:{f}" for f in ADAPTIVE}, host_values=True)
def no_gradient_clipping(site: Site[cst.Call], ctx: Context):
    call = site.node
    family = optimizer_family(ctx, call)
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
                    units = int_literal(ctx, ctx.arg(node, 0, "units"), s)
                    if units is None:
                        return None
                    layers.append([units, _dense_activation(ctx, node) or "linear"])
                else:
                    return None  # a layer the simulation would not rebuild
            return {"inputs": width, "layers": layers} if layers else None
        return None

    return ctx.fact("dense_stack", compute)


# -- the same rules on a model file that keeps its optimizer ---------------------------------
# The worker reads the optimizer's hyper-parameters and the model it trains from the graph
# (verify/graphs/stack.py); the probes are the specs the source checks above send, so the
# same recipes verify them.


def _saturating_graph(h: GraphHazard) -> bool:
    """TNL501 on a graph: a high learning rate, a sigmoid/softmax output and a hand-written
    log loss on it (a .keras file's built-in losses recover the logits: not flagged)."""
    return high_learning_rate(h) and bool(h.get("log_loss")) and bool(h.get("output"))


def _saturation_probe(h: GraphHazard) -> dict:
    out = h["output"]
    return {
        "kind": "train",
        "recipe": "saturation",
        **graph_optimizer_spec(h),
        "output": out["activation"],
        "units": out.get("units"),
        "fan_in": out.get("fan_in"),
        "bias": out.get("bias"),
        "below": out.get("below"),
        "loss": h["log_loss"],
        "loss_code": _loss_code(h),
    }


def _loss_code(h: GraphHazard) -> str | None:
    """The loss as a compile call names it (a .keras config's built-in loss), for the
    recipes' wording; a TF1 graph's loss has no such name."""
    name = h.get("builtin_loss")
    return f'"{name}"' if name else None


@graph_rule("TNL501", _saturating_graph, _saturation_probe)
def high_lr_saturating_output_graph(h: GraphHazard) -> str:
    out, loss = h["output"], h["log_loss"]
    eps = fmt(loss.get("eps") or 0)
    guard = {"log_eps": f"log(p + {eps})", "clip": f"log(clip(p, {eps}, 1 - {eps}))"}
    return (
        f"learning rate {fmt(h['learning_rate'])} of {optimizer_text(h)} is above "
        f"{fmt(h['lr_threshold'])} for {h['family']} with {out['activation']} outputs and a "
        f"hand-written {guard.get(loss['form'], 'log(p)')} loss in the graph: large steps push "
        "the logits into saturation, where that loss is stuck with a zero (or NaN) gradient; "
        "use linear outputs with a from_logits / *_with_logits loss, or a lower learning rate"
    )


def _unclipped_graph(h: GraphHazard) -> bool:
    """TNL502 on a graph: an adaptive optimizer at a high learning rate whose gradients reach
    its updates unclipped (no clipnorm/clipvalue in a .keras config; no ClipByValue, no
    scaling of a gradient by its own norm before a TF1 update op)."""
    return high_learning_rate(h) and h.get("family") in ADAPTIVE and not h.get("clipping")


def _clipping_probe(h: GraphHazard) -> dict:
    return {
        "kind": "train",
        "recipe": "clipping",
        **graph_optimizer_spec(h),
        "output": (h.get("output") or {}).get("activation"),
        "loss": h.get("log_loss"),
        "loss_code": _loss_code(h),
        "stack": h.get("stack"),
    }


@graph_rule("TNL502", _unclipped_graph, _clipping_probe)
def no_gradient_clipping_graph(h: GraphHazard) -> str:
    return (
        f"{optimizer_text(h)} is {h['family']} at learning rate {fmt(h['learning_rate'])} with no "
        "gradient clipping: one exploding gradient moves every weight by about lr per step in "
        "its sign, nothing bounds it; clip the gradients (clipnorm=, tf.clip_by_global_norm)"
    )


# -- TNL503, TNL504 --------------------------------------------------------------------------

_XENT = ops.FUSED_XENT


@rule("TNL503", ops=_XENT, host_values=True)
def probabilities_as_logits(site: Site[cst.Call], ctx: Context):
    call = site.node
    logits = ctx.arg(call, 1, "logits")
    if logits is None:
        return
    v = ctx.val(logits, site)
    if v.prob and not v.prob_by_use:
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
        from_logits = "from_logits" in kwargs_true(ctx, loss)
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
