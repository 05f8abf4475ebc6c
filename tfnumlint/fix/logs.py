"""Rewrites of logs, exponentials and probabilities into their fused, stable forms.

``log(sigmoid(z))`` -> ``log_sigmoid(z)``, a cross-entropy on probabilities -> the fused op on
the logits, ``log(1 + x)`` -> ``log1p(x)``, ``log(sum(exp(x)))`` -> ``reduce_logsumexp(x)``,
``exp(x) / sum(exp(x))`` -> ``softmax(x)``: ``safe`` by construction, the same function.  When
no logits are in reach, an epsilon under a log becomes a clip or a clamp (``unsafe``: it moves
values on purpose).
"""

from __future__ import annotations

import libcst as cst

from ..analysis.context import Context, Hit
from ..analysis.epsilons import additive_terms, first_arg, split_eps
from ..analysis.module import Site, parent_map
from ..floats import underflows
from .ir import IR, Bin, Call, Edit, Neg, Num, Plan, Src
from .match import (
    Prob,
    code_key,
    eps_num,
    here,
    log_arg,
    movable,
    op_of,
    origin,
    reduce_args,
    reduce_kw,
    trace_prob,
)
from .xent import factors, match_xent


def _log_of_prob(ctx: Context, site: Site, prob: Prob) -> IR | None:
    """log(p) in logits form, or None."""
    if not movable(ctx, prob.logits, site):
        return None
    if prob.kind == "sigmoid":
        return Call("log_sigmoid", [Neg(prob.logits) if prob.complement else prob.logits])
    kw: list[tuple[str, IR]] = [("axis", prob.axis)] if prob.axis is not None else []
    return Call("log_softmax", [prob.logits], kw)


def _fused_name(prob: Prob) -> str:
    return "tf.math.log_sigmoid" if prob.kind == "sigmoid" else "tf.nn.log_softmax"


def fix_log_of_probability(ctx: Context, hit: Hit) -> Plan | None:
    site, call = hit.site, hit.node
    x = log_arg(call)
    if x is None:
        return None
    prob = trace_prob(ctx, x, site)
    if prob is None:
        return None
    new = _log_of_prob(ctx, site, prob)
    if new is None:
        return None
    return Plan("", "safe", f"use {_fused_name(prob)} on the logits", [Edit(call, new)], prob.folds)


def fix_log_epsilon(ctx: Context, hit: Hit) -> Plan | None:
    site, call = hit.site, hit.node
    x = log_arg(call)
    if x is None:
        return None
    rest, eps = split_eps(ctx, x, site)
    if eps is None:
        return None
    prob = trace_prob(ctx, rest, site)
    if prob is not None:
        new = _log_of_prob(ctx, site, prob)
        if new is not None:
            return Plan(
                "",
                "safe",
                f"drop the epsilon and use {_fused_name(prob)} on the logits",
                [Edit(call, new)],
                prob.folds,
            )
    dtype = ctx.dtype(site)
    e = eps_num(dtype)
    if e is None:
        return None
    if eps > e.value and not underflows(eps, dtype):
        e = Num(_eps_text(ctx, x, site, eps), eps)  # keep a larger, representable epsilon
    v = ctx.val(rest, site)
    new_x: IR
    if v.prob:
        new_x = _clip_prob_expr(ctx, rest, site, e)
        what = f"clip the probability to [{e.text}, 1 - {e.text}]"
    else:
        new_x = Call("maximum", [here(rest, site), e])
        what = f"clamp with maximum(x, {e.text})"
    return Plan("", "unsafe", what, [Edit(x, new_x)])


def _eps_text(ctx: Context, x: cst.BaseExpression, site: Site, eps: float) -> str:
    """The epsilon as the code wrote it (``1e-6``, ``EPS``), else its repr."""
    for term, sign in additive_terms(x):
        if sign > 0 and ctx.val(term, site).const == eps:
            return ctx.code(term).strip()
    return repr(eps)


def _clip_prob_expr(ctx: Context, rest: cst.BaseExpression, site: Site, e: Num) -> IR:
    """clip(p) for p, 1 - clip(p) for 1 - p."""
    bound = Bin("-", Num("1", 1.0), e)
    terms = additive_terms(rest)
    if (
        len(terms) == 2
        and terms[0][1] > 0
        and terms[1][1] < 0
        and ctx.val(terms[0][0], site).const == 1.0
    ):
        return Bin("-", Num("1", 1.0), Call("clip_by_value", [here(terms[1][0], site), e, bound]))
    return Call("clip_by_value", [here(rest, site), e, bound])


def fix_cross_entropy(ctx: Context, hit: Hit) -> Plan | None:
    """The outermost expression around the hit that is a whole cross-entropy, fused."""
    site = hit.site
    parents = parent_map(site.statement)
    node: cst.CSTNode | None = hit.node
    best = None
    while node is not None and node is not site.statement:
        if isinstance(node, cst.BaseExpression):
            m = match_xent(ctx, node, site)
            if m is not None:
                best = (node, m)
        node = parents.get(id(node))
    if best is not None:
        found, (ir, folds) = best
        return Plan(
            "",
            "safe",
            "use the fused *_cross_entropy_with_logits on the logits",
            [Edit(found, ir)],
            folds,
        )
    # no logits: clip every probability under a log in the cross-entropy (unsafe)
    return _clip_fallback(ctx, hit)


def _clip_fallback(ctx: Context, hit: Hit) -> Plan | None:
    site = hit.site
    e = eps_num(ctx.dtype(site))
    if e is None:
        return None
    edits = []
    seen = set()
    parents = parent_map(site.statement)
    top: cst.CSTNode = hit.node
    while id(top) in parents and isinstance(parents[id(top)], cst.BinaryOperation):
        top = parents[id(top)]
    for t, s in additive_terms(top) if isinstance(top, cst.BaseExpression) else []:
        _sign, parts = factors(t, s)
        for f in parts:
            if isinstance(f, cst.Call) and ctx.op(f) == "log" and id(f) not in seen:
                seen.add(id(f))
                arg = log_arg(f)
                if arg is None:
                    continue
                rest, _ = split_eps(ctx, arg, site)
                v = ctx.val(rest, site)
                if not v.prob or v.guarded:
                    continue
                edits.append(Edit(arg, _clip_prob_expr(ctx, rest, site, e)))
    if not edits:
        return None
    return Plan("", "unsafe", f"clip the probabilities to [{e.text}, 1 - {e.text}]", edits)


def fix_log1p_expm1(ctx: Context, hit: Hit) -> Plan | None:
    site, node = hit.site, hit.node
    if isinstance(node, cst.Call):  # log(1 + x)
        return _log1p(ctx, node, site)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.left, cst.Call):  # exp(x) - 1
        x = first_arg(node.left, "x")
        if x is None:
            return None
        return Plan(
            "", "safe", "use tf.math.expm1(x)", [Edit(node, Call("expm1", [here(x, site)]))]
        )
    return None


def _log1p(ctx: Context, node: cst.Call, site: Site) -> Plan | None:
    x = log_arg(node)
    terms = additive_terms(x) if x is not None else []
    rest = [t for t, s in terms if ctx.val(t, site).const is None]
    if len(terms) != 2 or len(rest) != 1:
        return None
    inner = rest[0]
    z = first_arg(inner, "x") if isinstance(inner, cst.Call) and ctx.op(inner) == "exp" else None
    if z is not None:
        # log(1 + exp(z)) is softplus(z); log1p(exp(z)) would still overflow past z = 88.7
        return Plan(
            "", "safe", "use tf.math.softplus(z)", [Edit(node, Call("softplus", [here(z, site)]))]
        )
    return Plan(
        "", "safe", "use tf.math.log1p(x)", [Edit(node, Call("log1p", [here(inner, site)]))]
    )


def fix_logsumexp(ctx: Context, hit: Hit) -> Plan | None:
    site, call = hit.site, hit.node
    x = log_arg(call)
    if x is None:
        return None
    folds = []
    s_node, scope, order, name = origin(ctx, x, site.scope, site.order)
    if name:
        folds.append(name)
    if not isinstance(s_node, cst.Call) or ctx.op(s_node) != "reduce_sum":
        return None
    summed = first_arg(s_node, "input_tensor")
    if any(a.star for a in s_node.args) or summed is None:
        return None
    e_node, escope, eorder, ename = origin(ctx, summed, scope, order)
    if ename:
        folds.append(ename)
    if not isinstance(e_node, cst.Call) or ctx.op(e_node) != "exp":
        return None
    inner = first_arg(e_node, "x")
    if inner is None:
        return None
    src = Src(inner, escope, eorder)
    if reduce_args(ctx, s_node) is None:
        return None
    kw = reduce_kw(ctx, s_node, scope, order)
    if not movable(ctx, src, site) or not all(movable(ctx, v, site) for _, v in kw):
        return None
    return Plan(
        "",
        "safe",
        "use tf.reduce_logsumexp(x)",
        [Edit(call, Call("reduce_logsumexp", [src], list(kw)))],
        folds,
    )


def fix_fused_softmax(ctx: Context, hit: Hit) -> Plan | None:
    """exp(x) / reduce_sum(exp(x), axis, keepdims=True) -> softmax(x, axis)."""
    site = hit.site
    node = site.node
    if not isinstance(node, cst.BinaryOperation) or not isinstance(node.operator, cst.Divide):
        return None
    num, nscope, norder, nname = origin(ctx, node.left, site.scope, site.order)
    den = node.right
    if not isinstance(num, cst.Call) or ctx.op(num) != "exp":
        return None
    if not isinstance(den, cst.Call) or ctx.op(den) != "reduce_sum":
        return None
    summed = first_arg(den, "input_tensor")
    if summed is None:
        return None
    d_in, _dscope, _dorder, dname = origin(ctx, summed, site.scope, site.order)
    if d_in is not num and not (
        op_of(ctx, d_in) == "exp" and code_key(ctx, d_in) == code_key(ctx, num)
    ):
        return None
    folds = []
    for n in (nname, dname):
        if n and n not in folds:
            folds.append(n)
    axis, keepdims = reduce_args(ctx, den) or (None, None)
    if axis is None or keepdims is None or ctx.code(keepdims).strip() != "True":
        return None
    x = first_arg(num, "x")
    if x is None:
        return None
    src = Src(x, nscope, norder)
    if not movable(ctx, src, site):
        return None
    new = Call("softmax", [src], [("axis", here(axis, site))])
    return Plan("", "safe", "use tf.nn.softmax", [Edit(node, new)], folds)
