"""TNL40x: epsilons the dtype cannot hold, optimizer epsilons, float16 range."""

from __future__ import annotations

import libcst as cst

from .. import ops
from ..analysis.context import Context, Hit
from ..analysis.dtypectx import dtype_word
from ..analysis.epsilons import eps_value, first_arg
from ..analysis.layer_policy import operand_dtype
from ..analysis.module import Site, parent_map
from ..analysis.optimizer_calls import optimizer_epsilon
from ..analysis.tfvalues import TF, UNKNOWN, calls_tf, origin
from ..optimizers import ADAPTIVE, OPTIMIZERS
from .common import MAX_VALUE, fmt, spacing, underflows
from .graph import Hazard as GraphHazard
from .graph import graph_rule, range_text, where_op
from .registry import rule


def _min_magnitude(lo: float, hi: float) -> float:
    if lo > 0:
        return lo
    if hi < 0:
        return -hi
    return 0.0


_LOW_PRECISION = frozenset({"float32", "float16", "half", "bfloat16"})
_HOST_PRECISION = frozenset({"float64", "double", "longdouble", "float128"})


def _dtype_named(ctx: Context, call: cst.Call, site: Site) -> str | None:
    """The dtype a call converts to: ``np.float32(...)``, ``dtype=tf.float16``, ``astype``."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in _LOW_PRECISION | _HOST_PRECISION:
        return func.attr.value
    for i, arg in enumerate(call.args):
        at_dtype = (arg.keyword is not None and arg.keyword.value == "dtype") or (
            arg.keyword is None and i == 0 and isinstance(func, cst.Attribute)
            and func.attr.value == "astype"
        )  # fmt: skip
        if at_dtype:
            word = dtype_word(arg.value, site.scope)
            if word in _LOW_PRECISION | _HOST_PRECISION:
                return word
    return None


def _call_context(ctx: Context, call: cst.Call, site: Site) -> bool | None:
    """A call the constant is an argument of: True when it computes in float32/float16 (a
    TensorFlow op, a float32 cast), False on the host (numpy, math, builtins, float64)."""
    word = _dtype_named(ctx, call, site)
    if word is not None:
        return word in _LOW_PRECISION
    kind = origin(ctx, call, site.scope, site.order)
    return kind == TF


def _operand_context(ctx: Context, other: cst.BaseExpression, site: Site) -> bool | None:
    """The other operand of an enclosing +, -, *, /: a tensor rounds the sum to its dtype."""
    kind = origin(ctx, other, site.scope, site.order)
    if kind == TF:
        return True
    if kind == UNKNOWN and not isinstance(other, (cst.Integer, cst.Float)):
        return calls_tf(ctx, site.scope, module_level=False)  # unknown origin in TF code
    return None


def _uses_context(ctx: Context, name: str) -> bool:
    """``CLIP = 1 - 1e-10`` used later as an operand or argument of TensorFlow code."""
    for use in ctx.info.calls:
        passed = any(isinstance(a.value, cst.Name) and a.value.value == name for a in use.node.args)
        if passed and _call_context(ctx, use.node, use):
            return True
    for use in ctx.info.binops:
        node = use.node
        for mine, other in ((node.left, node.right), (node.right, node.left)):
            mine_named = isinstance(mine, cst.Name) and mine.value == name
            if mine_named and _operand_context(ctx, other, use):
                return True
    return False


def rounding_context(ctx: Context, site: Site) -> bool:
    """The constant expression at ``site`` is computed in float32/float16, not float64.

    Python and numpy compute ``1 - 1e-10`` in float64, where it is exact enough; the epsilon is
    lost only when the value meets a float32/float16 tensor.  Evidence, innermost first: an
    enclosing TensorFlow op or a cast to float32/float16 (host calls such as ``min``,
    ``np.log`` or a float64 cast say no), a tensor operand of an enclosing ``+ - * /``, a name
    the value is assigned to and later used with TensorFlow, and lastly a float16 context of
    the function (analysis/dtypectx.py)."""
    node = site.node
    if isinstance(node, cst.Call) and _call_context(ctx, node, site):
        return True  # tf.maximum(x, 1e-8)
    if isinstance(node, cst.BinaryOperation) and any(
        _operand_context(ctx, side, site) for side in (node.left, node.right)
    ):
        return True  # var + 1e-10 with a tensor `var`
    parents = parent_map(site.statement)
    child: cst.CSTNode = node
    parent = parents.get(id(child))
    while parent is not None:
        if isinstance(parent, cst.Call) and child is not parent.func:
            return bool(_call_context(ctx, parent, site))
        if isinstance(parent, cst.BinaryOperation):
            other = parent.right if child is parent.left else parent.left
            if _operand_context(ctx, other, site):
                return True
        if isinstance(parent, (cst.Assign, cst.AnnAssign)):
            targets = parent.targets if isinstance(parent, cst.Assign) else [parent]
            for t in targets:
                if isinstance(t.target, cst.Name) and _uses_context(ctx, t.target.value):
                    return True
            break
        child, parent = parent, parents.get(id(parent))
    return ctx.dtype(site) in ("float16", "bfloat16")


@rule("TNL401", binops=(cst.Add, cst.Subtract), host_values=True)
def epsilon_absorbed(site: Site, ctx: Context):
    node = site.node
    pairs = [(node.right, node.left)]
    if isinstance(node.operator, cst.Add):
        pairs.append((node.left, node.right))
    # the epsilon first: most sums hold none, and the rounding context reads the whole module
    found = [(eps_value(ctx, eps_node, site), other) for eps_node, other in pairs]
    epsilons = [(eps, other) for eps, other in found if eps is not None]
    if not epsilons:
        return
    dtype = ctx.dtype(site)
    if not rounding_context(ctx, site):
        return  # float64 host arithmetic: 1 - 1e-10 is exact enough there
    for eps, other in epsilons:
        if underflows(eps, dtype):
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
    if op is None or op not in ops.PARAMS:
        return
    # a call TNL402 dispatches on: its second operand (`y`, `clip_value_min`) is the bound
    bound = ctx.arg(node, 1, ops.PARAMS[op][1])
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
    if dtype != "float16" or not rounding_context(ctx, site):
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


@rule("TNL403", ops={f"optimizer:{f}" for f in ADAPTIVE}, host_values=True)
def optimizer_epsilon_too_small(site: Site[cst.Call], ctx: Context):
    call = site.node
    family = (ctx.op(call) or "").partition(":")[2]
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


@rule("TNL404", ops=_F16_OVERFLOW_OPS, binops=(cst.Add, cst.Subtract, cst.Multiply, cst.Power))
def float16_overflow(site: Site, ctx: Context):
    if ctx.dtype(site) != "float16":
        return
    node = site.node
    limit = MAX_VALUE["float16"]
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Power):
        yield from _power_overflow(node, site, ctx)
        return
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
        if isinstance(node.operator, cst.Multiply) and _same_value(node.left, node.right, ctx):
            yield from _unbounded_overflow(
                node, node.left, "square", site, ctx, f"`{ctx.code(node)}`"
            )
        return
    op = ctx.op(node)
    x = first_arg(node, "x")
    if x is not None:
        yield from _unbounded_overflow(node, x, op or "", site, ctx)


def _same_value(left: cst.BaseExpression, right: cst.BaseExpression, ctx: Context) -> bool:
    """``x * x``, ``self.s * self.s``: a square, read twice from one name (no call between)."""
    plain = (cst.Name, cst.Attribute)
    return (
        isinstance(left, plain) and isinstance(right, plain) and ctx.code(left) == ctx.code(right)
    )


def _power_overflow(node: cst.BinaryOperation, site: Site, ctx: Context):
    """`x ** 2` is a square: it overflows float16 past 255.9 as `tf.square(x)` does."""
    if ctx.val(node.right, site).const == 2:
        yield from _unbounded_overflow(node, node.left, "square", site, ctx)


def _unbounded_overflow(
    node: cst.CSTNode, x: cst.BaseExpression, op: str, site: Site, ctx: Context, what: str = ""
):
    v = ctx.val(x, site)
    bound = 11.09 if op == "exp" else 255.9
    reach = v.hi if op == "exp" else max(v.hi, -v.lo)
    if not (reach > bound and v.kind not in ("param", "unknown", "name")):
        return
    if operand_dtype(x, site.scope, site.order, ctx.info.imports) not in (None, "float16"):
        return  # cast to float32 (or float64) in its own code
    layer = ctx.layer_dtype(site.scope)
    if layer is None or layer.dtype != "float16":
        yield Hit(
            node,
            f"{what or op} in float16 overflows to inf once its input passes {bound} (float16 "
            "max is 65504); compute it in float32 (tf.cast) or keep it bounded",
            site,
        )
        return
    yield Hit(
        node,
        f"{what or op} overflows float16 (max 65504) once its input passes {bound}: "
        f"{v.desc or ctx.code(x)} lies in [{v.lo:.6g}, {v.hi:.6g}], and {layer.why}; compute it in float32 "
        "(tf.cast, or build the layer with dtype='float32')",
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


# ---------------------------------------------------------------- the same rules on model graphs


@graph_rule("TNL401", lambda h: h.get("pattern") == "absorbed")
def epsilon_absorbed_op(h: GraphHazard) -> str:
    f = h.get("facts") or {}
    return (
        f"epsilon absorbed: {where_op(h)} adds {fmt(float(f.get('epsilon', 0)))} to a value in "
        f"{range_text(h)}, and in {f.get('dtype')} the sum rounds back to that value; add the "
        "epsilon to the term that can be 0"
    )


@graph_rule("TNL402", lambda h: h.get("pattern") == "underflow")
def epsilon_underflow_op(h: GraphHazard) -> str:
    f = h.get("facts") or {}
    return (
        f"constant underflows: {where_op(h)} casts {fmt(float(f.get('value', 0)))} to "
        f"{f.get('dtype')}, where it is exactly 0; the guard vanishes"
    )


def _optimizer_hazard(h: GraphHazard) -> bool:
    facts = OPTIMIZERS.get(str(h.get("family")))
    eps = h.get("epsilon")
    if h.get("pattern") != "optimizer" or facts is None or not facts.adaptive:
        return False
    return eps is not None and (
        eps == 0 or (h.get("dtype") == "float16" and eps < FLOAT16_SAFE_EPS)
    )


@graph_rule("TNL403", _optimizer_hazard)
def optimizer_epsilon_op(h: GraphHazard) -> str:
    eps = float(h["epsilon"])
    if eps == 0:
        return f"optimizer epsilon is 0 in `{h['op']}`: the update divides by 0 wherever v is 0"
    state = "is 0" if underflows(eps, "float16") else "is subnormal"
    return (
        f"the optimizer `{h['op']}` the graph keeps updates float16 variables with epsilon "
        f"{fmt(eps)}, which {state} in float16: sqrt(v) + eps is 0 for small v; use "
        f"epsilon={FLOAT16_SAFE_EPS:g}"
    )
