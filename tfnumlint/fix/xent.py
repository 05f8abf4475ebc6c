"""Match a hand-written cross-entropy and build its fused ``*_cross_entropy_with_logits`` IR.

``-(y * log(sigmoid(z)) + (1 - y) * log(1 - sigmoid(z)))`` is ``sigmoid_cross_entropy_with_logits``
of ``z``; ``-reduce_sum(y * log(softmax(z)), axis=-1)`` is ``softmax_cross_entropy_with_logits``.
Constant weights become ``pos_weight`` or a scale; the reductions around the sum are kept as
written.  Anything the matcher does not recognise exactly is left alone (the caller falls back
to clipping).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from .. import ops
from ..analysis.context import Context
from ..analysis.epsilons import additive_terms, first_arg, split_eps
from ..analysis.module import Scope, Site
from .ir import IR, Bin, Call, Neg, Num, Reuse, Src
from .match import Prob, code_key, here, log_arg, movable, op_of, reduce_args, trace_prob

Folds = list[tuple[str, Scope]]


@dataclass
class _Term:
    """One ``coef * label * log(prob)`` term of the sum."""

    sign: int
    coef: list[tuple[cst.BaseExpression, float]]  # constant factors and their values
    label: cst.BaseExpression
    label_complement: bool
    prob: Prob


@dataclass
class _Xent:
    """``sign * scale * xent``, elementwise or summed over the softmax's class axis."""

    sign: int
    xent: Call
    scale: IR | None
    folds: Folds
    per_class: bool  # a softmax cross-entropy: the class axis is summed by the fused op
    class_axis: Src | None  # the softmax's axis (None: the last)


def factors(node: cst.BaseExpression, sign: int = 1) -> tuple[int, list[cst.BaseExpression]]:
    """Flatten ``-a * b * c`` into (-1, [a, b, c])."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        s, f = factors(node.expression, sign)
        return -s, f
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        s1, f1 = factors(node.left, sign)
        s2, f2 = factors(node.right, 1)
        return s1 * s2, f1 + f2
    return sign, [node]


def _term(ctx: Context, node: cst.BaseExpression, sign: int, site: Site) -> _Term | None:
    sign, parts = factors(node, sign)
    logs = [f for f in parts if isinstance(f, cst.Call) and ctx.op(f) == "log"]
    if len(logs) != 1:
        return None
    log_call = logs[0]
    arg = log_arg(log_call)
    if arg is None:
        return None
    rest, _ = split_eps(ctx, arg, site)
    coef, labels = [], []
    for f in parts:
        if f is log_call:
            continue
        c = ctx.val(f, site).const
        if c is not None:
            if c <= 0:
                return None
            coef.append((f, c))
        else:
            labels.append(f)
    if len(labels) != 1:
        return None
    label = labels[0]
    complement = False
    if (
        isinstance(label, cst.BinaryOperation)
        and isinstance(label.operator, cst.Subtract)
        and ctx.val(label.left, site).const == 1.0
    ):
        complement, label = True, label.right
    prob = trace_prob(ctx, rest, site)
    if prob is None:
        return None
    return _Term(sign, coef, label, complement, prob)


def _coef_ir(t: _Term, site: Site) -> tuple[IR, float]:
    """The term's constant factors as IR, and their product."""
    if not t.coef:
        return Num("1", 1.0), 1.0
    first, value = t.coef[0]
    ir: IR = here(first, site)
    for f, c in t.coef[1:]:
        value *= c
        ir = Bin("*", ir, here(f, site))
    return ir, value


def _xent_terms(ctx: Context, node: cst.BaseExpression, site: Site) -> _Xent | None:
    """The fused cross-entropy of an elementwise sum of label * log(prob) terms, or None."""
    terms = []
    for expr, s in additive_terms(node):
        term = _term(ctx, expr, s, site)
        if term is None:
            return None
        terms.append(term)
    if not terms:
        return None
    if not all(movable(ctx, t.prob.logits, site) for t in terms):
        return None
    logits = {code_key(ctx, t.prob.logits.node) for t in terms}
    labels = {code_key(ctx, t.label) for t in terms}
    if len(logits) != 1 or len(labels) != 1:
        return None
    z = terms[0].prob.logits
    y = here(terms[0].label, site)
    folds = [f for t in terms for f in t.prob.folds]
    if len(terms) == 2 and all(t.prob.kind == "sigmoid" for t in terms):
        return _sigmoid_xent(terms, y, z, folds, site)
    if len(terms) == 1 and terms[0].prob.kind == "softmax" and not terms[0].label_complement:
        t = terms[0]
        a_ir, a = _coef_ir(t, site)
        xent = Call("softmax_xent", [], [("labels", y), ("logits", z)])
        return _Xent(-t.sign, xent, None if a == 1.0 else a_ir, folds, True, t.prob.axis)
    return None


def _sigmoid_xent(terms: list[_Term], y: Src, z: Src, folds: Folds, site: Site) -> _Xent | None:
    """y * log(sigmoid(z)) and (1 - y) * log(1 - sigmoid(z)), weighted or not."""
    pos = [t for t in terms if not t.label_complement and not t.prob.complement]
    neg = [t for t in terms if t.label_complement and t.prob.complement]
    if len(pos) != 1 or len(neg) != 1 or pos[0].sign != neg[0].sign:
        return None
    a_ir, a = _coef_ir(pos[0], site)
    b_ir, b = _coef_ir(neg[0], site)
    sign = -pos[0].sign  # loss = sign * (a*y*-log s + b*(1-y)*-log(1-s))
    scale: IR | None
    if a == b:
        xent = Call("sigmoid_xent", [], [("labels", y), ("logits", z)])
        scale = None if a == 1.0 else a_ir
    elif b == 1.0:
        xent = Call("weighted_xent", [], [("labels", y), ("logits", z), ("pos_weight", a_ir)])
        scale = None
    else:
        xent = Call(
            "weighted_xent",
            [],
            [("labels", y), ("logits", z), ("pos_weight", Bin("/", a_ir, b_ir))],
        )
        scale = b_ir
    return _Xent(sign, xent, scale, folds, False, None)


def match_xent(ctx: Context, node: cst.BaseExpression, site: Site) -> tuple[IR, Folds] | None:
    """(IR, folds) for a whole cross-entropy expression ``node``, or None."""
    sign = 1
    inner = node
    while isinstance(inner, cst.UnaryOperation) and isinstance(inner.operator, cst.Minus):
        sign, inner = -sign, inner.expression
    op = op_of(ctx, inner)
    if isinstance(inner, cst.Call) and op in ops.LINEAR_REDUCTIONS:
        return _match_reduced(ctx, inner, op, sign, site)
    res = _xent_terms(ctx, inner, site)
    if res is None or res.per_class:
        return None
    return _signed(res.xent, res.sign * sign, res.scale), res.folds


def _match_reduced(
    ctx: Context, inner: cst.Call, op: str, sign: int, site: Site
) -> tuple[IR, Folds] | None:
    """A cross-entropy under ``reduce_sum``/``reduce_mean``: the reduction is kept as written,
    except a softmax's class-axis sum, which the fused op computes."""
    arg0 = first_arg(inner, "input_tensor")
    if arg0 is None or any(a.star for a in inner.args):
        return None
    res = _xent_terms(ctx, arg0, site)
    if res is None:
        sub = match_xent(ctx, arg0, site)
        if sub is None:
            return None
        ir, folds = sub
        return _wrap_reduce(inner, ir, sign, site), folds
    reduced = reduce_args(ctx, inner)
    if reduced is None:
        return None
    axis, keepdims = reduced
    out: IR
    if res.per_class:  # softmax: the class axis is summed by the fused op
        if op != "reduce_sum" or keepdims is not None:
            return None
        soft_axis = res.class_axis
        soft_axis_code = code_key(ctx, soft_axis.node) if soft_axis is not None else "-1"
        if axis is not None:
            # the sum runs over the softmax's own axis (the same literal): the fused op
            # computes it per example; any other axis is a different quantity
            if code_key(ctx, axis) != soft_axis_code or not _int_literal(soft_axis_code):
                return None
            xent = res.xent
            if soft_axis_code != "-1" and soft_axis is not None:
                xent = Call(xent.op, xent.args, [*xent.kw, ("axis", soft_axis)])
            out = xent
        else:
            if soft_axis_code != "-1":
                return None
            out = Call("reduce_sum", [res.xent])  # every axis: the per-example losses, summed
    else:
        out = _wrap_reduce(inner, res.xent, 1, site)
    return _signed(out, res.sign * sign, res.scale), res.folds


def _int_literal(code: str) -> bool:
    return code.lstrip("-").isdigit()


def _wrap_reduce(call: cst.Call, ir: IR, sign: int, site: Site) -> IR:
    """The original reduction, kept as written, around the fused op."""
    out = Reuse(call, ir, site.scope, site.order)
    return Neg(out) if sign < 0 else out


def _signed(ir: IR, sign: int, scale: IR | None) -> IR:
    if scale is not None:
        ir = Bin("*", scale, ir)
    return Neg(ir) if sign < 0 else ir
