"""Rewrites that keep an op inside its domain: a safe division, a clamped root or norm, the
double-where form, a representable optimizer epsilon.

All but the double-where move values on purpose (0 where the denominator is 0, a floor under a
root), so they are ``unsafe`` by construction; the proof still decides whether they are offered.
"""

from __future__ import annotations

import libcst as cst

from .. import ops
from ..analysis.context import Context, Hit
from ..analysis.epsilons import first_arg, split_eps
from ..analysis.slicing.signatures import bind
from ..optimizers import OPTIMIZERS
from .guards import guarded, has_tf_provenance, result_tested
from .ir import IR, Call, Edit, Keep, Num, Plan
from .match import eps_num, here, pure


def _substitute(op: str) -> str:
    """The inner where's stand-in, inside the op's domain: 0 for an op whose danger is leaving
    (-1, 1) (acos, asin, atanh), 1.0 for the others."""
    entry = ops.REGISTRY.get(op)
    danger = entry.danger if entry is not None else None
    return "zeros" if danger is not None and danger.test == "leaves_unit" else "ones"


# the Euclidean norm's spellings of ``ord=``
_EUCLIDEAN = ("2", "2.0", "'euclidean'", '"euclidean"')


def fix_divide_no_nan(ctx: Context, hit: Hit) -> Plan | None:
    site, node = hit.site, hit.node
    num: cst.BaseExpression | None
    den: cst.BaseExpression | None
    if isinstance(node, cst.BinaryOperation):
        num, den = node.left, node.right
    elif isinstance(node, cst.Call):
        num, den = ctx.arg(node, 0, "x"), ctx.arg(node, 1, "y")
    else:
        return None
    if num is None or den is None:
        return None
    if not has_tf_provenance(ctx, site, num, den) or guarded(ctx, site, node, num, den):
        return None  # Python/numpy arithmetic, or a guard that already handles d == 0
    new = Call("divide_no_nan", [here(num, site), here(den, site)])
    return Plan(
        "",
        "unsafe",
        "use tf.math.divide_no_nan (0 where the denominator is 0)",
        [Edit(node, new)],
    )


def fix_clamped_sqrt(ctx: Context, hit: Hit) -> Plan | None:
    site, call = hit.site, hit.node
    if not isinstance(call, cst.Call):
        return None
    x = first_arg(call, "x")
    e = eps_num(ctx.dtype(site))
    if x is None or e is None:
        return None
    rest, eps = split_eps(ctx, x, site)
    inner = rest if eps is not None else x
    if result_tested(ctx, site):
        return None  # the code tests the result against 0 later: a clamp defeats that guard
    return Plan(
        "",
        "unsafe",
        f"clamp with maximum(s, {e.text})",
        [Edit(x, Call("maximum", [here(inner, site), e]))],
    )


def fix_safe_norm(ctx: Context, hit: Hit) -> Plan | None:
    site, call = hit.site, hit.node
    if not isinstance(call, cst.Call):
        return None
    e = eps_num(ctx.dtype(site))
    x = first_arg(call, "tensor", "input_tensor", "x")
    if x is None or e is None or any(a.star for a in call.args):
        return None
    if result_tested(ctx, site):
        return None  # the code tests the norm against 0 later: a clamp defeats that guard
    op = ctx.op(call)
    bound = bind(op or "", call)
    if op is None or bound.unknown:
        return None
    ord_ = bound.params.get("ord")
    if ord_ is not None and ctx.code(ord_).strip() not in _EUCLIDEAN:
        return None  # another norm: the safe Euclidean form would change its value
    axis, keepdims = bound.params.get("axis"), bound.params.get("keepdims")
    if op == "norm" and axis is not None and isinstance(axis, (cst.Tuple, cst.List)):
        return None  # matrix norms: not the Euclidean norm of a vector
    kw = []
    if axis is not None:
        kw.append(("axis", here(axis, site)))
    if keepdims is not None:
        kw.append(("keepdims", here(keepdims, site)))
    summed = Call("reduce_sum", [Call("square", [here(x, site)])], list(kw))
    new = Call("sqrt", [Call("maximum", [summed, e])])
    return Plan(
        "",
        "unsafe",
        "a safe norm: sqrt(maximum(reduce_sum(square(d)), eps))",
        [Edit(call, new)],
    )


def fix_double_where(ctx: Context, hit: Hit) -> Plan | None:
    """Guard the input that TNL302's predicate found with an inner where on the same
    condition (rules/overflow.py: unsafe_where_branch)."""
    from ..rules.overflow import unsafe_where_branch

    site, call = hit.site, hit.node
    if not isinstance(call, cst.Call):
        return None
    cond = ctx.arg(call, 0, "condition")
    if cond is None or not pure(ctx, cond) or any(a.star for a in call.args):
        return None
    found = unsafe_where_branch(ctx, call, site)
    if found is None:
        return None
    index, x, op = found
    if not pure(ctx, x):
        return None
    sub = Call(_substitute(op), [here(x, site)])
    pair: list[IR] = [here(x, site), sub] if index == 1 else [sub, here(x, site)]
    new = Call("where", [here(cond, site), *pair])
    return Plan(
        "",
        "safe",
        "the double-where form: make the input safe with an inner tf.where",
        [Edit(x, new)],
    )


def fix_optimizer_epsilon(ctx: Context, hit: Hit) -> Plan | None:
    """Pass a representable ``epsilon=`` to an adaptive optimizer (keyword only)."""
    from ..rules.precision import FLOAT16_SAFE_EPS

    site, call = hit.site, hit.node
    if not isinstance(call, cst.Call) or any(a.star for a in call.args):
        return None
    family = (ctx.op(call) or ":").split(":")[1]
    facts = OPTIMIZERS.get(family)
    index = facts.epsilon_index if facts is not None and facts.adaptive else -1
    positional = [a for a in call.args if a.keyword is None]
    if index >= 0 and len(positional) > index:
        return None  # a positional epsilon: rewrite by hand
    eps = Num("1e-4", FLOAT16_SAFE_EPS)
    if ctx.dtype(site) != "float16":
        eps = Num("1e-7", 1e-7)
    new = Keep(call, {"epsilon": eps}, site.scope, site.order)
    return Plan("", "unsafe", f"pass epsilon={eps.text}", [Edit(call, new)])
