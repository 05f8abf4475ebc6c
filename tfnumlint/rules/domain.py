"""TNL20x: operations outside their domain, or with an infinite gradient at its edge."""

from __future__ import annotations

import libcst as cst

from ..analysis.context import Context, Hit
from ..analysis.driven import trainable_attribute
from ..analysis.epsilons import first_arg, split_eps
from ..analysis.module import Scope, Site
from ..analysis.values import Val
from .common import fmt, underflows
from .graph import Hazard as GraphHazard
from .graph import graph_rule, is_danger, producer_text, range_text, where_op
from .registry import rule


def _can_hit_zero(v: Val, weak_ok: bool = False) -> bool:
    """Known by provenance to reach exactly 0, with nothing keeping it away.  A "weak" zero
    (square(x) of an arbitrary x) only counts where asked: a hand-written norm."""
    if v.zero_weak and not weak_ok:
        return False
    return v.known and v.zero is not None and v.can_be_zero and not v.guarded and v.const is None


def _denominator_hazard(ctx: Context, d: cst.BaseExpression, site: Site) -> str | None:
    """Why ``d`` can be exactly 0, or None."""
    dtype = ctx.dtype(site)
    rest, eps = split_eps(ctx, d, site)
    if eps is not None:
        if underflows(eps, dtype):
            core = ctx.val(rest, site)
            if core.lo >= 0 and core.zero:
                return (
                    f"{core.desc} is 0 when {core.zero}, and the {fmt(eps)} guard is 0 in {dtype}"
                )
        return None
    v = ctx.val(d, site)
    if _can_hit_zero(v):
        return f"{v.desc} is exactly 0 when {v.zero}"
    return None


def _division_parts(site: Site, ctx: Context):
    node = site.node
    if isinstance(node, cst.BinaryOperation):
        return node.left, node.right
    num = ctx.arg(node, 0, "x")
    den = ctx.arg(node, 1, "y")
    return num, den


@rule("TNL201", binops=(cst.Divide,), ops={"divide"})
def division_by_possible_zero(site: Site, ctx: Context):
    num, den = _division_parts(site, ctx)
    if num is None or den is None:
        return
    n = ctx.val(num, site)
    if n.const is not None:
        return  # 1 / x is TNL206's
    d = ctx.val(den, site)
    if n.has_exp and d.exp_sum:  # a manual softmax: its exps are TNL301's, the sum is ours
        if d.zero is not None and d.can_be_zero and not d.guarded:
            yield Hit(
                site.node,
                f"softmax written with exp: the denominator {d.desc} is exactly 0 when "
                f"{d.zero}, and then 0 / 0 = NaN; use tf.nn.softmax (it subtracts the max, so "
                "the sum is at least 1)",
                site,
            )
        return
    why = _denominator_hazard(ctx, den, site)
    if why:
        yield Hit(
            site.node,
            f"division by a value that can be 0: {why}; x / 0 is inf and 0 / 0 is NaN (use "
            "tf.math.divide_no_nan or a maximum(d, eps) guard)",
            site,
        )


@rule("TNL202", ops={"sqrt"})
def sqrt_at_zero(site: Site[cst.Call], ctx: Context):
    x = first_arg(site.node, "x")
    if x is None:
        return
    rest, eps = split_eps(ctx, x, site)
    if eps is not None and not underflows(eps, ctx.dtype(site)):
        return
    v = ctx.val(rest if eps is not None else x, site)
    if _can_hit_zero(v, weak_ok=v.kind == "reduce_sum"):  # sqrt(reduce_sum(square(x))): a norm
        yield Hit(
            site.node,
            f"sqrt of {v.desc}, which is exactly 0 when {v.zero}: the gradient 1/(2*sqrt(x)) is "
            "inf there and NaN after the chain rule; use tf.sqrt(tf.maximum(x, eps))",
            site,
        )


_EUCLIDEAN = {"2", "2.0", "'euclidean'", '"euclidean"', "'fro'", '"fro"', "None"}


@rule("TNL203", ops={"norm", "euclidean_norm"})
def norm_at_zero(site: Site[cst.Call], ctx: Context):
    call = site.node
    ord_node = ctx.arg(call, -1, "ord")
    if ord_node is not None and ctx.code(ord_node).strip() not in _EUCLIDEAN:
        return
    x = first_arg(call, "tensor", "input_tensor", "x")
    if x is None:
        return
    _, eps = split_eps(ctx, x, site)
    if eps is not None and not underflows(eps, ctx.dtype(site)):
        return  # norm(x + eps): every component is shifted, the vector is never exactly 0
    v = ctx.val(x, site)
    if v.positive or v.guarded or (v.kind == "call" and not v.tensor):
        return  # ...or a non-TF value such as np.array(...)
    yield Hit(
        call,
        f"the Euclidean norm of {v.desc or 'a vector'} has a NaN gradient when the vector is "
        "exactly zero (a - b with a == b; still so in TF 2.21); use "
        "tf.sqrt(tf.maximum(tf.reduce_sum(tf.square(x), axis), eps))",
        site,
    )


def _fractional(value: float | None) -> bool:
    return value is not None and value != int(value)


@rule("TNL204", ops={"pow"}, binops=(cst.Power,))
def fractional_power(site: Site, ctx: Context):
    node = site.node
    base: cst.BaseExpression | None
    exponent: cst.BaseExpression | None
    if isinstance(node, cst.BinaryOperation):
        base, exponent = node.left, node.right
    else:
        base, exponent = ctx.arg(node, 0, "x"), ctx.arg(node, 1, "y")
    if base is None or exponent is None:
        return
    p = ctx.val(exponent, site).const
    if p is None:
        yield from _trained_power(node, base, exponent, site, ctx)
        return
    if not _fractional(p):
        return
    b = ctx.val(base, site)
    if isinstance(node, cst.BinaryOperation) and not b.tensor:
        return  # python scalars such as d_k ** -0.5
    if b.positive or b.guarded or b.const is not None:
        return
    hazard = "NaN for a negative base" if b.lo < 0 else "an inf gradient at 0"
    yield Hit(
        node,
        f"x ** {fmt(p)} on {b.desc or 'a base'} that can be {'negative' if b.lo < 0 else '0'}: "
        f"{hazard} (d/dx x**{fmt(p)} = {fmt(p)}*x**{fmt(p - 1)}); clamp the base with tf.maximum(x, eps)",
        site,
    )


def _trained_power(
    node: cst.CSTNode,
    base: cst.BaseExpression,
    exponent: cst.BaseExpression,
    site: Site,
    ctx: Context,
):
    """``x ** self.p`` with ``self.p`` a trainable weight (GeM pooling, a learned compression):
    training moves the exponent off any integer, and d/dp x**p = x**p * log(x) is 0 * -inf =
    NaN at x = 0 whatever p is."""
    weight = _trained_weight(exponent, site, ctx)
    b = ctx.val(base, site)
    if weight is None or b.positive or b.guarded or b.const is not None or b.hi <= 0:
        return
    yield Hit(
        node,
        f"power of {b.desc or 'a base'} that can be {'negative' if b.lo < 0 else '0'} to a "
        f"trained exponent (`{weight}` is a trainable weight): at a base of 0 the gradient of "
        "the exponent, x**p * log(x), is NaN (0 * -inf), and for p < 1 so is the base's through "
        "a ReLU; a negative base gives NaN; clamp the base with tf.maximum(x, eps)",
        site,
    )


def _trained_weight(exponent: cst.BaseExpression, site: Site, ctx: Context) -> str | None:
    """The code of a trainable weight the exponent reads: ``self.p`` that its class assigns
    ``self.add_weight(...)`` or ``tf.Variable(...)``, or a name bound to a ``tf.Variable``."""
    fn: Scope | None = site.scope
    while fn is not None and fn.kind != "function":
        fn = fn.parent
    for node in _walk(exponent):
        if (
            isinstance(node, cst.Attribute)
            and isinstance(node.value, cst.Name)
            and fn is not None
            and node.value.value == fn.self_name
            and trainable_attribute(node.attr.value, fn)
        ):
            return ctx.code(node)
        if isinstance(node, cst.Name):
            found = ctx.ev.lookup(node.value, site.scope, site.order)
            value = getattr(found, "value", None)
            if isinstance(value, cst.Call) and ctx.op(value) == "variable":
                return node.value
    return None


def _walk(node: cst.CSTNode):
    yield node
    for child in node.children:
        yield from _walk(child)


@rule("TNL205", ops={"acos", "asin", "atanh"})
def inverse_trig_domain(site: Site[cst.Call], ctx: Context):
    x = first_arg(site.node, "x")
    if x is None:
        return
    v = ctx.val(x, site)
    if v.lo > -1.0 and v.hi < 1.0:
        return
    if v.const is not None or v.kind in ("param", "name") or (v.kind == "call" and not v.tensor):
        return  # a constant, a thin wrapper over its own parameter, or a non-TF value (np.array)
    name = ctx.op(site.node)
    yield Hit(
        site.node,
        f"{name} of {v.desc or 'a value'} that can reach ±1 (a cosine similarity of parallel "
        f"vectors does): the gradient is ∞ there and NaN beyond; clip to [-1 + eps, 1 - eps]",
        site,
    )


@rule("TNL206", ops={"rsqrt", "reciprocal"}, binops=(cst.Divide,))
def reciprocal_of_possible_zero(site: Site, ctx: Context):
    node = site.node
    den: cst.BaseExpression | None
    what: str | None
    if isinstance(node, cst.BinaryOperation):
        if ctx.val(node.left, site).const is None:
            return
        den = node.right
        what = f"{ctx.code(node.left).strip()} / x"
    else:
        den = first_arg(node, "x")
        what = ctx.op(node)
    if den is None:
        return
    why = _denominator_hazard(ctx, den, site)
    if why:
        yield Hit(
            node,
            f"{what} of a value that can be 0: {why}; the result and its gradient are inf there",
            site,
        )


# ---------------------------------------------------------------- the same rules on model graphs


@graph_rule("TNL201", lambda h: is_danger(h, "divide"))
def division_op(h: GraphHazard) -> str:
    return (
        f"division by a value that can be 0: {where_op(h)} divides by {producer_text(h)}, whose "
        f"range with the model's weights is {range_text(h)}; x / 0 = inf and 0 / 0 = NaN"
    )


@graph_rule("TNL202", lambda h: is_danger(h, "sqrt"))
def sqrt_at_zero_op(h: GraphHazard) -> str:
    return (
        f"sqrt of a value that can be 0: {where_op(h)} reads {producer_text(h)}, whose range with "
        f"the model's weights is {range_text(h)}; the derivative 1 / (2 sqrt(x)) is inf at 0"
    )


@graph_rule("TNL204", lambda h: is_danger(h, "pow"))
def fractional_power_op(h: GraphHazard) -> str:
    return (
        f"power of a base that can be <= 0: {where_op(h)} raises {producer_text(h)} (range "
        f"{range_text(h)}) to an exponent not known to be a positive integer"
    )


@graph_rule("TNL205", lambda h: is_danger(h, "acos", "asin", "atanh"))
def inverse_trig_op(h: GraphHazard) -> str:
    return (
        f"{h.get('canonical')} of a value that can leave [-1, 1]: {where_op(h)} reads "
        f"{producer_text(h)}, range {range_text(h)}; NaN past ±1, infinite gradient at ±1"
    )


@graph_rule("TNL206", lambda h: is_danger(h, "rsqrt", "reciprocal"))
def reciprocal_op(h: GraphHazard) -> str:
    return (
        f"{h.get('canonical')} of a value that can be 0: {where_op(h)} reads {producer_text(h)}, "
        f"range {range_text(h)}; 1 / 0 = inf, and 0 * inf = NaN downstream"
    )
