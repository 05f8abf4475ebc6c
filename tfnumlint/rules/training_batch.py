"""TNL506: a loss (or a hand-written update) summed over the batch and trained with SGD, so the
step grows with the batch size: ``minimize``, ``compile``, ``tape.gradient`` and
``assign_add``/``assign_sub`` forms, with the spec the summed-loss simulation replays.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from .. import ops
from ..analysis.context import Context, Hit
from ..analysis.datagen import batch_pick
from ..analysis.module import Site
from ..analysis.names import children as child_nodes
from ..analysis.optimizer_calls import optimizer_spec
from .common import fmt
from .datascale import resolve
from .registry import rule
from .training import (
    int_literal,
    kwargs_true,
)
from .training_sgd import (
    feature_data,
    feed_entries,
    known_first,
)

# -- TNL506: a loss or an update summed over the batch, with SGD ----------------------------


def batch_size(ctx: Context) -> int | None:
    """The batch size when the source states it: ``.batch(200)``, ``next_batch(200)``,
    ``batch_size=200``, a batch pick of the fed data whose size the code says (``train(X[j:j
    + 200], ...)``, ``xb = X[idx]`` with ``idx = choice(N, 200)``), or the rows of a literal
    array fed to the model."""

    def compute() -> int | None:
        for s in ctx.info.calls:
            func = s.node.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("batch", "next_batch"):
                n = int_literal(ctx, ctx.arg(s.node, 0, "batch_size"), s)
                if n:
                    return n
            kw = next(
                (a.value for a in s.node.args if a.keyword and a.keyword.value == "batch_size"),
                None,
            )
            n = int_literal(ctx, kw, s)
            if n:
                return n
        for value, s in _fed_values(ctx):
            n = batch_pick(ctx.ev, value, s.scope, s.order)
            if n and n > 1:
                return n
        for d, _ in feature_data(ctx):
            if d.scale is not None and d.scale.rows and d.scale.rows > 1:
                return d.scale.rows
        return None

    return ctx.fact("batch_size", compute)


def _fed_values(ctx: Context) -> Iterator[tuple[cst.BaseExpression, Site]]:
    """The values the program feeds its training: ``feed_dict`` values, ``fit``'s ``x``, and
    the arguments of the calls to the module's own functions (a training step's batch)."""
    for _, value, s in feed_entries(ctx):
        yield value, s
    for s in ctx.info.calls:
        func = s.node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "fit":
            x = ctx.arg(s.node, 0, "x")
            if x is not None:
                yield x, s
        elif isinstance(func, cst.Name) and func.value in ctx.info.functions:
            for arg in s.node.args:
                yield arg.value, s


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
    seen = set()
    for sub in _walk_calls(node):
        op = ctx.op(sub)
        if op == "log" and sub.args:
            v = ctx.val(sub.args[0].value, site)
            seen.add("softmax_log" if v.kind == "softmax" or v.prob else "log")
        elif op:
            seen.add(op)
    if _squares(ctx, node, site):  # x ** 2: a square, as tf.square(x) is
        seen.add("square")
    if "sparse_softmax_xent" in seen:  # class ids: the same cross-entropy
        seen.add("softmax_xent")
    for form in ("softmax_xent", "sigmoid_xent", "softmax_log"):
        if form in seen:
            return form
    if seen & ops.SQUARING:
        return "squared"
    return "softmax_log" if "log" in seen else "unknown"


def _walk_calls(node: cst.CSTNode) -> Iterator[cst.Call]:
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Call):
            yield n
        stack.extend(child_nodes(n))


def _squares(ctx: Context, node: cst.CSTNode, site: Site) -> bool:
    """Is a square written with the operator (``x ** 2``) under ``node``?"""
    stack = [node]
    while stack:
        n = stack.pop()
        if (
            isinstance(n, cst.BinaryOperation)
            and isinstance(n.operator, cst.Power)
            and ctx.val(n.right, site).const == 2
        ):
            return True
        stack.extend(child_nodes(n))
    return False


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
    found = known_first(feature_data(ctx))
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
            "rate_claim": True,  # its step size breaks it: the training rung's smaller rates
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
                return int_literal(ctx, shape.elements[-1].value, s)
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
            if transposed or "transpose_a" in kwargs_true(ctx, sub):
                return True
    return False


def _averaged(ctx: Context, node: cst.BaseExpression) -> bool:
    """A mean or a division anywhere in the update: the batch sum is already normalised."""
    for sub in _walk_calls(node):
        entry = ops.REGISTRY.get(ctx.op(sub) or "")
        if entry is not None and (entry.reduction == "mean" or entry.operator == "/"):
            return True
    stack: list[cst.CSTNode] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Divide):
            return True
        stack.extend(child_nodes(n))
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
