"""TNL50x: training configuration: learning rate, clipping, logits vs probabilities, data."""

from __future__ import annotations

import libcst as cst

from ..analysis.module import Site
from ..analysis.names import PROBABILITY_LOSSES
from . import Context, Hit, rule
from .common import fmt

ADAPTIVE = frozenset({"adam", "adamw", "adamax", "nadam", "rmsprop", "adagrad", "adadelta", "ftrl"})
_ALL_OPTIMIZERS = frozenset({f"optimizer:{f}" for f in (*ADAPTIVE, "sgd")})
_CLIP_KWARGS = frozenset({"clipnorm", "clipvalue", "global_clipnorm"})


def learning_rate(ctx: Context, call: cst.Call, site: Site) -> float | None:
    node = ctx.arg(call, 0, "learning_rate", "lr")
    if node is None:
        return 0.001  # every Keras optimizer's default but SGD's (0.01), below any threshold
    return ctx.val(node, site).const


def _probability_outputs(ctx: Context) -> bool:
    def compute() -> bool:
        for s in ctx.info.calls:
            op = ctx.op(s.node)
            if op in ("sigmoid", "softmax"):
                return True
            if op == "dense":
                act = ctx.arg(s.node, 1, "activation")
                if isinstance(act, cst.SimpleString) and act.evaluated_value in (
                    "sigmoid",
                    "softmax",
                ):
                    return True
                if act is not None and ctx.info.imports.op(act) in ("sigmoid", "softmax"):
                    return True
        return False

    return bool(ctx.fact("probability_outputs", compute))


def _log_loss(ctx: Context) -> bool:
    def compute() -> bool:
        for s in ctx.info.calls:
            op = ctx.op(s.node) or ""
            if op == "log":
                return True
            if op.startswith("loss:") and "from_logits" not in _kwargs_true(ctx, s.node):
                return True
        return any(
            isinstance(s, str) and s in PROBABILITY_LOSSES for s in _compile_loss_strings(ctx)
        )

    return bool(ctx.fact("log_loss", compute))


def _kwargs_true(ctx: Context, call: cst.Call) -> set[str]:
    return {
        a.keyword.value
        for a in call.args
        if a.keyword is not None and isinstance(a.value, cst.Name) and a.value.value == "True"
    }


def _compile_loss_strings(ctx: Context) -> list[str]:
    out = []
    for s in ctx.info.calls:
        func = s.node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "compile":
            loss = ctx.arg(s.node, 1, "loss")
            if isinstance(loss, cst.SimpleString):
                out.append(loss.evaluated_value)
    return out


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


def _family(ctx: Context, call: cst.Call) -> str:
    return ctx.op(call).split(":")[1]


@rule("TNL501", ops=_ALL_OPTIMIZERS)
def high_lr_saturating_output(site: Site, ctx: Context):
    call = site.node
    family = _family(ctx, call)
    lr = learning_rate(ctx, call, site)
    threshold = ctx.settings.lr_thresholds.get(family)
    if lr is None or threshold is None or lr <= threshold:
        return
    if not (_probability_outputs(ctx) and _log_loss(ctx)):
        return
    yield Hit(
        call,
        f"learning rate {fmt(lr)} is above {fmt(threshold)} for {family} with sigmoid/softmax "
        "outputs and a log loss: large steps push the logits past ±17, where a float32 sigmoid "
        "is exactly 0 or 1, and the loss turns inf/NaN or its gradient dies",
        site,
        {"lr": lr, "family": family},
    )


@rule("TNL502", ops={f"optimizer:{f}" for f in ADAPTIVE})
def no_gradient_clipping(site: Site, ctx: Context):
    call = site.node
    family = _family(ctx, call)
    lr = learning_rate(ctx, call, site)
    threshold = ctx.settings.lr_thresholds.get(family)
    if lr is None or threshold is None or lr <= threshold or _has_clipping(ctx, call):
        return
    yield Hit(
        call,
        f"{family} at learning rate {fmt(lr)} with no gradient clipping: one exploding gradient "
        "moves every weight by about lr per step in its sign, nothing bounds it; pass clipnorm= "
        "or clip with tf.clip_by_global_norm",
        site,
    )


_XENT = frozenset({"sigmoid_xent", "softmax_xent", "weighted_xent"})


@rule("TNL503", ops=_XENT)
def probabilities_as_logits(site: Site, ctx: Context):
    call = site.node
    logits = ctx.arg(call, 1, "logits")
    if logits is None:
        return
    v = ctx.val(logits, site)
    if v.prob and not v.prob_by_name:
        yield Hit(
            call,
            f"{ctx.op(call).replace('_xent', '')} cross-entropy *_with_logits receives {v.desc}, "
            "a probability: it applies the sigmoid/softmax again, so the loss saturates and "
            "trains on the wrong gradient; pass the pre-activation logits",
            site,
        )


@rule("TNL503", methods={"compile"})
def compile_mismatch(site: Site, ctx: Context):
    call = site.node
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
    if from_logits and model.activation in ("sigmoid", "softmax"):
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


@rule("TNL504", ops={"dataset"}, methods={"fit"})
def unchecked_input_data(site: Site, ctx: Context):
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
