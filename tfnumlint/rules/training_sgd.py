"""TNL505: plain or momentum SGD whose learning rate diverges on the program's features: their
scale (literal arrays, normalisation, feeds) read from the source, the squared loss and the
model inputs found, and the spec the divergence simulation replays.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import libcst as cst

from .. import ops
from ..analysis.context import Context, Hit
from ..analysis.module import Site
from ..analysis.optimizer_calls import optimizer_spec
from .common import fmt
from .datascale import DataScale, Scale, curvature, data_scale, resolve
from .graph import Hazard as GraphHazard
from .graph import graph_rule, is_optimizer, optimizer_text
from .graph import optimizer_spec as graph_optimizer_spec
from .registry import rule
from .training import (
    SQUARED_LOSS_NAMES,
    UNKNOWN_SCALE_LR,
)

# -- TNL505: plain / momentum SGD on features of a known scale ------------------------------


def squared_loss(ctx: Context) -> bool:
    """The module trains on a squared error (hand-written, a Keras loss or a TF1 loss)."""

    def compute() -> bool:
        for s in ctx.info.calls:
            if _squared(ctx, s.node, s):
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
        return any(_squared(ctx, s.node, s) for s in ctx.info.binops)

    return bool(ctx.fact("squared_loss", compute))


def row_weight(ctx: Context) -> float | None:
    """The weight a summed squared error gives each row: ``reduce_sum(square(pred - y)) / c``
    is 1 / c (1 with no divisor); None where the loss is not written so (a mean gives each row
    1 / rows, which the curvature of :func:`.datascale.curvature` already is)."""

    def compute() -> float | None:
        for s in ctx.info.calls:
            if ctx.op(s.node) != "reduce_sum" or not s.node.args:
                continue
            if not _squared(ctx, s.node.args[0].value, s):
                continue
            for b in ctx.info.binops:
                if isinstance(b.node.operator, cst.Divide) and b.node.left is s.node:
                    c = ctx.val(b.node.right, b).const
                    return 1.0 / float(c) if c else None
            return 1.0
        return None

    return ctx.fact("row_weight", compute)


def _squared(ctx: Context, node: cst.BaseExpression, site: Site) -> bool:
    """``square(pred - y)``, ``pow(pred - y, 2)``, ``(pred - y) ** 2`` or a
    ``squared_difference``, written here or bound to a name."""
    node, _, _ = resolve(ctx, node, site.scope, site.order)
    if isinstance(node, cst.Call):
        op = ctx.op(node)
        if op == "squared_difference":
            return True
        if op == "square" and node.args:
            return _residual(ctx, node.args[0].value, site)
        return op == "pow" and len(node.args) >= 2 and _squared_residual(ctx, node, site)
    return (
        isinstance(node, cst.BinaryOperation)
        and isinstance(node.operator, cst.Power)
        and ctx.val(node.right, site).const == 2
        and _residual(ctx, node.left, site)
    )


def _squared_residual(ctx: Context, call: cst.Call, site: Site) -> bool:
    exponent = ctx.val(call.args[1].value, site).const
    return exponent == 2 and _residual(ctx, call.args[0].value, site)


def _residual(ctx: Context, node: cst.BaseExpression, site: Site) -> bool:
    """``pred - y``: a squared residual is a regression loss; ``square(w)`` is a penalty."""
    node, _, _ = resolve(ctx, node, site.scope, site.order)
    while isinstance(node, cst.Call) and ctx.op(node) in ops.CONVERSIONS and node.args:
        node = node.args[0].value
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
        return True
    return isinstance(node, cst.Call) and ctx.op(node) == "subtract"


def _is_variable(ctx: Context, node: cst.BaseExpression, site: Site) -> bool:
    target, _, _ = resolve(ctx, node, site.scope, site.order)
    return isinstance(target, cst.Call) and ctx.op(target) == "variable"


def _model_inputs(ctx: Context) -> Iterator[tuple[cst.BaseExpression, Site]]:
    """Expressions multiplied by a tf.Variable: ``w * x``, ``x @ W``, ``tf.matmul(x, W)``,
    ``tf.multiply(x, W)``."""
    for s in ctx.info.binops:
        node = s.node
        if isinstance(node.operator, (cst.Multiply, cst.MatrixMultiply)):
            if _is_variable(ctx, node.left, s):
                yield node.right, s
            elif _is_variable(ctx, node.right, s):
                yield node.left, s
    for s in ctx.info.calls:
        op = ctx.op(s.node) or ""
        if (op == "matmul" or ops.OPERATORS.get(op) == "*") and len(s.node.args) >= 2:
            a, b = s.node.args[0].value, s.node.args[1].value
            if _is_variable(ctx, b, s):
                yield a, s
            elif _is_variable(ctx, a, s):
                yield b, s


def feed_entries(ctx: Context) -> Iterator[tuple[cst.BaseExpression, cst.BaseExpression, Site]]:
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
        feeds = list(feed_entries(ctx))
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
        for _key, value, s in feed_entries(ctx):
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


def known_first(data: list[tuple[DataScale, Site]]) -> tuple[DataScale, Site] | None:
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
    found = known_first(feature_data(ctx))
    if found is None:
        return
    data, _ = found
    momentum = opt["momentum"]
    what = "SGD" if not momentum else f"SGD with momentum {fmt(momentum)}"
    spec = {"kind": "train", "recipe": "divergence", "rate_claim": True, **opt, "data": data.name}
    if data.scale is not None:
        scale = data.scale
        lam, loss_text = _loss_curvature(ctx, data)
        limit = 2 * (1 + momentum) / lam
        if lr <= limit:
            return
        yield Hit(
            call,
            f"{what} at lr {fmt(lr)} on `{data.name}` = {scale.text} (RMS {fmt(scale.rms)}) with a "
            f"{loss_text} = {fmt(lam)}, so any lr above {fmt(limit)} grows the weights "
            f"geometrically to inf; normalise the features or use a learning rate below "
            f"{fmt(limit)}",
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


def _loss_curvature(ctx: Context, data: DataScale) -> tuple[float, str]:
    """The loss's curvature along the weights, and how the message says it: a mean squared
    error's 2·mean(x²), or a summed one's, times the rows a step and the weight it gives each
    (``reduce_sum(...) / (2 * 200)`` on one row a step: 2·mean(x²) / 400)."""
    scale = data.scale
    assert scale is not None
    lam, weight = curvature(scale), row_weight(ctx)
    rows = 1 if data.one_row else scale.rows
    if weight is None or rows is None:
        return lam, "squared-error loss: the loss curvature is about 2·mean(x²)"
    per_step = rows * weight
    each = "" if weight == 1 else f", each weighted {fmt(weight)}"
    fed = "one row a step" if rows == 1 else f"{rows} rows a step"
    return lam * per_step, (
        f"squared error summed over {fed}{each}: the loss curvature is about "
        f"2·mean(x²)·{fmt(per_step)}"
    )


# -- TNL505 on a model file that keeps its optimizer ------------------------------------------
# The features are the input the model's first dense layer reads (verify/graphs/stack.py);
# their scale is its box when a fact of the model gives it (a uint8 dtype, a Rescaling, a
# Normalization) or --input-range does: features spread uniformly over that box.

BOX_ROWS = 256  # rows of the features rebuilt from a box


def box_scale(h: GraphHazard) -> Scale | None:
    """The features of a graph's first layer as uniform over their box, when it is known."""
    f = h.get("features") or {}
    if not f.get("known"):
        return None
    lo, hi = (float(v) for v in f["box"])
    text = f"uniform in [{fmt(lo)}, {fmt(hi)}] ({f.get('why')})"
    mean_sq = (lo * lo + lo * hi + hi * hi) / 3
    return Scale(
        "uniform", (lo, hi), BOX_ROWS, int(f.get("width") or 1), (lo + hi) / 2, mean_sq, text
    )


def _rms_limit(h: GraphHazard) -> float:
    return math.sqrt((1 + (h.get("momentum") or 0.0)) / float(h["learning_rate"]))


def _sgd_graph(h: GraphHazard) -> bool:
    """An SGD update of a linear output trained on a squared error, at a learning rate the
    features' scale makes unstable (known box), or that a box of unknown origin allows to be
    (lr >= 0.1, as in source)."""
    lr = h.get("learning_rate")
    f = h.get("features")
    if not (is_optimizer(h) and h.get("family") == "sgd" and h.get("squared") and f and lr):
        return False
    scale = box_scale(h)
    if scale is not None:
        return lr > 2 * (1 + (h.get("momentum") or 0.0)) / curvature(scale)
    peak = max(abs(float(v)) for v in f["box"])
    return lr >= UNKNOWN_SCALE_LR and peak > _rms_limit(h)


def _divergence_probe(h: GraphHazard) -> dict:
    scale = box_scale(h)
    spec = {
        "kind": "train",
        "recipe": "divergence",
        **graph_optimizer_spec(h),
        "data": h["features"]["name"],
    }
    if scale is None:
        return {**spec, "features": None, "rms_limit": _rms_limit(h)}
    return {**spec, "features": scale.to_spec(), "curvature": curvature(scale)}


@graph_rule("TNL505", _sgd_graph, _divergence_probe)
def sgd_diverges_graph(h: GraphHazard) -> str:
    f = h["features"]
    momentum = h.get("momentum") or 0.0
    what = "SGD" if not momentum else f"SGD with momentum {fmt(momentum)}"
    lo, hi = f["box"]
    scale = box_scale(h)
    where = f"`{f['name']}` in [{fmt(lo)}, {fmt(hi)}] ({f['why']})"
    if scale is not None:
        lam = curvature(scale)
        limit = 2 * (1 + momentum) / lam
        return (
            f"{what} at lr {fmt(h['learning_rate'])} ({optimizer_text(h)}) on a squared-error "
            f"loss over {where}: spread over that box (RMS {fmt(scale.rms)}) the loss curvature "
            f"is about {fmt(lam)}, so any lr above {fmt(limit)} grows the weights geometrically "
            "to inf; normalise the features or lower the learning rate"
        )
    return (
        f"{what} at lr {fmt(h['learning_rate'])} ({optimizer_text(h)}) on a squared-error loss "
        f"diverges once the features' RMS exceeds {fmt(_rms_limit(h))}; the first layer reads "
        f"{where}, and nothing in the graph normalises it"
    )
