"""TNL40x: epsilons the dtype cannot hold, optimizer epsilons, float16 range."""

from __future__ import annotations

import libcst as cst

from ..analysis.context import Context, Hit
from ..analysis.module import Site
from ..optimizers import ADAPTIVE, OPTIMIZERS
from . import rule
from .common import MAX_VALUE, eps_value, first_arg, fmt, spacing, underflows


def _min_magnitude(lo: float, hi: float) -> float:
    if lo > 0:
        return lo
    if hi < 0:
        return -hi
    return 0.0


@rule("TNL401", binops=(cst.Add, cst.Subtract), host_values=True)
def epsilon_absorbed(site: Site, ctx: Context):
    node = site.node
    dtype = ctx.dtype(site)
    pairs = [(node.right, node.left)]
    if isinstance(node.operator, cst.Add):
        pairs.append((node.left, node.right))
    for eps_node, other in pairs:
        eps = eps_value(ctx, eps_node, site)
        if eps is None or underflows(eps, dtype):
            continue
        v = ctx.val(other, site)
        magnitude = _min_magnitude(v.lo, v.hi)
        if magnitude == 0.0 or magnitude == float("inf"):
            continue
        if v.const is not None and abs(v.const) != 1.0:
            continue  # 0.4356 - 4e-10: a correction to a tabulated constant, never a guard
        gap = spacing(magnitude, dtype)
        if eps < gap / 2:
            shown = (
                fmt(v.const) if v.const is not None else f"values of magnitude >= {fmt(magnitude)}"
            )
            yield Hit(
                node,
                f"epsilon {fmt(eps)} is absorbed: added to {shown} in {dtype} it changes nothing "
                f"(the spacing there is {fmt(gap)}), so `{ctx.code(node).strip()}` carries no "
                "epsilon at all; add the epsilon last, to the value that can reach 0",
                site,
                {"eps": eps},
            )
            return


def _eps_uses(ctx: Context, site: Site):
    """Constants used as epsilons by this node: added terms, clip/maximum bounds."""
    node = site.node
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, (cst.Add, cst.Subtract)):
            for side in (node.left, node.right):
                e = eps_value(ctx, side, site)
                if e is not None:
                    yield side, e
        return
    op = ctx.op(node)
    if op == "clip_by_value":
        bound = ctx.arg(node, 1, "clip_value_min")
    elif op in ("maximum", "add"):
        bound = ctx.arg(node, 1, "y")
    else:
        return
    if bound is not None:
        e = eps_value(ctx, bound, site)
        if e is not None:
            yield bound, e


@rule(
    "TNL402",
    binops=(cst.Add, cst.Subtract),
    ops={"clip_by_value", "maximum", "add"},
    host_values=True,
)
def epsilon_underflow(site: Site, ctx: Context):
    dtype = ctx.dtype(site)
    if dtype != "float16":
        return
    for _node, eps in _eps_uses(ctx, site):
        if underflows(eps, dtype):
            yield Hit(
                site.node,
                f"epsilon {fmt(eps)} is 0 in {dtype} (the smallest float16 subnormal is 5.96e-08): "
                f"`{ctx.code(site.node).strip()}` has no guard at all; use 1e-4 or larger",
                site,
                {"eps": eps},
            )
            return


FLOAT16_SAFE_EPS = 1e-4


def optimizer_epsilon(
    ctx: Context, call: cst.Call, site: Site, family: str
) -> tuple[float | None, bool]:
    """The epsilon an optimizer runs with, and whether it was given explicitly."""
    facts = OPTIMIZERS[family]
    name = ctx.info.imports.resolve(call.func) or ""
    tf1 = name.startswith("tf.train.")
    node = ctx.arg(call, facts.epsilon_index, "epsilon")
    if node is not None:
        return ctx.val(node, site).const, True
    return (facts.tf1_epsilon if tf1 else facts.keras_epsilon), False


@rule("TNL403", ops={f"optimizer:{f}" for f in ADAPTIVE}, host_values=True)
def optimizer_epsilon_too_small(site: Site[cst.Call], ctx: Context):
    call = site.node
    family = ctx.op(call).split(":")[1]
    eps, explicit = optimizer_epsilon(ctx, call, site, family)
    if eps is None:
        return
    dtype = ctx.dtype(site)
    given = "" if explicit else "default "
    if eps == 0:
        yield Hit(
            call,
            "optimizer epsilon is 0: the update m / (sqrt(v) + 0) divides by 0 wherever v is 0",
            site,
        )
    elif dtype == "float16" and ctx.info.float16_storage(site.scope) and eps < FLOAT16_SAFE_EPS:
        state = "is 0" if underflows(eps, dtype) else "is subnormal"
        yield Hit(
            call,
            f"the {given}optimizer epsilon {fmt(eps)} {state} in float16: sqrt(v) + eps is 0 for small v and "
            f"the update divides by 0; pass epsilon={FLOAT16_SAFE_EPS:g}",
            site,
            {"epsilon": eps},
        )


_F16_OVERFLOW_OPS = frozenset({"exp", "square"})


@rule("TNL404", ops=_F16_OVERFLOW_OPS, binops=(cst.Add, cst.Subtract, cst.Multiply))
def float16_overflow(site: Site, ctx: Context):
    if ctx.dtype(site) != "float16":
        return
    node = site.node
    limit = MAX_VALUE["float16"]
    if isinstance(node, cst.BinaryOperation):
        for side in (node.left, node.right):
            c = ctx.val(side, site).const
            if c is not None and abs(c) > limit and _is_literal(side):
                yield Hit(
                    node,
                    f"{fmt(c)} is beyond the float16 range (max 65504): it becomes {'-' if c < 0 else ''}inf",
                    site,
                )
                return
        return
    op = ctx.op(node)
    x = first_arg(node, "x")
    if x is None:
        return
    v = ctx.val(x, site)
    bound = 11.09 if op == "exp" else 255.9
    if v.hi > bound and v.kind not in ("param", "unknown", "name"):
        yield Hit(
            node,
            f"{op} in float16 overflows to inf once its input passes {bound} (float16 max is 65504); "
            "compute it in float32 (tf.cast) or keep it bounded",
            site,
        )


def _is_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))


@rule("TNL404", module=True)
def mixed_precision_without_loss_scaling(ctx: Context):
    policy_calls = [s for s in ctx.info.calls if ctx.op(s.node) == "set_policy"]
    mixed = [
        s
        for s in policy_calls
        if "float16" in ctx.code(s.node) and "bfloat16" not in ctx.code(s.node)
    ]
    if not mixed:
        return
    ops = {ctx.op(s.node) for s in ctx.info.calls}
    methods = {
        s.node.func.attr.value for s in ctx.info.calls if isinstance(s.node.func, cst.Attribute)
    }
    custom_loop = "gradient_tape" in ops and ("apply_gradients" in methods or "gradient" in methods)
    if custom_loop and "loss_scale_optimizer" not in ops:
        site = mixed[0]
        yield Hit(
            site.node,
            "mixed_float16 with a custom GradientTape loop and no LossScaleOptimizer: float16 "
            "gradients below 6e-8 flush to 0 (and large ones overflow past 65504); wrap the "
            "optimizer in tf.keras.mixed_precision.LossScaleOptimizer",
            site,
        )
