"""Per-rule rewrites, pure libcst (never imports TensorFlow).

A rewrite turns one rule hit into a :class:`Plan`: a list of edits (an original node and the
expression that replaces it), the applicability the rewrite has by construction, and the
assignments it may make dead.  The replacement is a tiny expression IR (:class:`Call`,
:class:`Src`, ...) so that it can be rendered twice: as source text, in the user's own import
spelling, and as a probe tree for the proof (see :mod:`tfnumlint.fix.proof`).

Applicability by construction: rewrites to a mathematically identical fused op are ``safe``
(the proof may still downgrade or drop them); rewrites that move values on purpose
(clipping, ``maximum(x, eps)``, ``divide_no_nan``, a larger optimizer epsilon) are ``unsafe``;
advice that cannot be applied mechanically is a ``suggestion`` (no edits, never applied).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from ..analysis.context import Context, Hit
from ..analysis.module import Binding, Scope, Site, parent_map
from ..optimizers import OPTIMIZERS
from ..rules.common import additive_terms, first_arg, split_eps, underflows
from ..rules.recipes import RECIPES, recipe_for
from ..verify.signatures import bind
from .guards import guarded, has_tf_provenance, result_tested

# canonical op -> (path under the tensorflow module, Keras-backend name or None)
API: dict[str, tuple[str, str | None]] = {
    "log": ("math.log", "log"),
    "log1p": ("math.log1p", None),
    "softplus": ("math.softplus", "softplus"),
    "expm1": ("math.expm1", None),
    "log_softmax": ("nn.log_softmax", None),
    "log_sigmoid": ("math.log_sigmoid", None),
    "reduce_logsumexp": ("reduce_logsumexp", "logsumexp"),
    "softmax": ("nn.softmax", "softmax"),
    "sqrt": ("sqrt", "sqrt"),
    "square": ("square", "square"),
    "maximum": ("maximum", "maximum"),
    "clip_by_value": ("clip_by_value", "clip"),
    "reduce_sum": ("reduce_sum", "sum"),
    "reduce_mean": ("reduce_mean", "mean"),
    "divide_no_nan": ("math.divide_no_nan", None),
    "where": ("where", None),
    "ones": ("ones_like", "ones_like"),
    "zeros": ("zeros_like", "zeros_like"),
    "sigmoid_xent": ("nn.sigmoid_cross_entropy_with_logits", None),
    "softmax_xent": ("nn.softmax_cross_entropy_with_logits", None),
    "weighted_xent": ("nn.weighted_cross_entropy_with_logits", None),
}

EPS = {"float16": 1e-4, "float32": 1e-7, "float64": 1e-7}
EPS_TEXT = {1e-4: "1e-4", 1e-7: "1e-7"}


# -- the replacement IR ------------------------------------------------------------------
@dataclass
class Src:
    """An original sub-expression, evaluated where it originally sat."""

    node: cst.BaseExpression
    scope: Scope
    order: int


@dataclass
class Num:
    text: str
    value: float


@dataclass
class Call:
    op: str  # canonical op, a key of API
    args: list[Any] = field(default_factory=list)
    kw: list[tuple[str, Any]] = field(default_factory=list)


@dataclass
class Bin:
    op: str  # + - * /
    left: Any
    right: Any


@dataclass
class Neg:
    x: Any


@dataclass
class Keep:
    """An original call re-emitted with changed keyword arguments (no new TF names)."""

    node: cst.Call
    set_kw: dict[str, Any]
    scope: Scope
    order: int


@dataclass
class Reuse:
    """An original call kept as written (layout, comments) with its first argument replaced."""

    node: cst.Call
    arg: Any
    scope: Scope
    order: int


@dataclass
class Edit:
    node: cst.CSTNode  # original node (identity) to replace
    new: Any  # IR


@dataclass
class Plan:
    rule: str
    applicability: str  # safe | unsafe | suggestion
    message: str
    edits: list[Edit] = field(default_factory=list)
    folds: list[tuple[str, Scope]] = field(default_factory=list)  # names whose assignment may die
    probe: dict[str, Any] | None = None  # filled by apply (original/rewritten probe trees)
    proof: dict[str, Any] | None = None
    replacement: str = ""
    span: tuple[int, int, int, int] = (0, 0, 0, 0)

    @property
    def ops(self) -> set[str]:
        out: set[str] = set()
        for e in self.edits:
            _collect_ops(e.new, out)
        return out


def _collect_ops(ir, out: set[str]) -> None:
    if isinstance(ir, Call):
        out.add(ir.op)
        for a in ir.args:
            _collect_ops(a, out)
        for _, v in ir.kw:
            _collect_ops(v, out)
    elif isinstance(ir, Bin):
        _collect_ops(ir.left, out)
        _collect_ops(ir.right, out)
    elif isinstance(ir, Neg):
        _collect_ops(ir.x, out)
    elif isinstance(ir, Keep):
        for v in ir.set_kw.values():
            _collect_ops(v, out)
    elif isinstance(ir, Reuse):
        _collect_ops(ir.arg, out)


# -- rendering to source -----------------------------------------------------------------
_ATOMIC = (
    cst.Name,
    cst.Attribute,
    cst.Call,
    cst.Subscript,
    cst.Integer,
    cst.Float,
    cst.SimpleString,
)


class Renderer:
    """Render IR to source text, in the file's spelling (``tf.`` alias or Keras backend)."""

    def __init__(self, module: cst.Module, prefix: str, backend: str | None = None) -> None:
        self.module = module
        self.prefix = prefix  # e.g. "tf"
        self.backend = backend  # e.g. "K" when every op of a plan exists in keras.backend

    def text(self, ir, operand: bool = False) -> str:
        if isinstance(ir, Src):
            code = self.module.code_for_node(ir.node).strip()
            if operand and not _atomic(ir.node):
                return f"({code})"
            return code
        if isinstance(ir, Num):
            return ir.text if not (operand and ir.text.startswith("-")) else f"({ir.text})"
        if isinstance(ir, Neg):
            return f"-{self.text(ir.x, operand=True)}"
        if isinstance(ir, Bin):
            left = self.text(ir.left, operand=True)
            right = self.text(ir.right, operand=True)
            out = f"{left} {ir.op} {right}"
            return f"({out})" if operand else out
        if isinstance(ir, Call):
            path, kname = API[ir.op]
            if self.backend and kname:
                callee = f"{self.backend}.{kname}"
            else:
                callee = f"{self.prefix}.{path}"
            parts = [self.text(a) for a in ir.args]
            parts += [f"{k}={self.text(v)}" for k, v in ir.kw]
            return f"{callee}({', '.join(parts)})"
        if isinstance(ir, Keep):
            return self.module.code_for_node(self.keep_node(ir)).strip()
        if isinstance(ir, Reuse):
            args = list(ir.node.args)
            args[0] = args[0].with_changes(value=cst.parse_expression(self.text(ir.arg)))
            return self.module.code_for_node(
                ir.node.with_changes(args=args, lpar=[], rpar=[])
            ).strip()
        raise TypeError(f"cannot render {ir!r}")

    def keep_node(self, ir: Keep) -> cst.Call:
        call = ir.node
        args = list(call.args)
        done = set()
        for i, a in enumerate(args):
            if a.keyword is not None and a.keyword.value in ir.set_kw:
                value = cst.parse_expression(self.text(ir.set_kw[a.keyword.value]))
                args[i] = a.with_changes(value=value)
                done.add(a.keyword.value)
        for name, v in ir.set_kw.items():
            if name in done:
                continue
            value = cst.parse_expression(self.text(v))
            new = cst.Arg(
                value=value,
                keyword=cst.Name(name),
                equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
            )
            if args:
                last = args[-1]
                comma = last.comma
                if isinstance(comma, cst.MaybeSentinel) or comma is cst.MaybeSentinel.DEFAULT:
                    args[-1] = last.with_changes(
                        comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                    )
                else:  # keep a trailing comma (and its newline) after the new argument
                    args[-1] = last.with_changes(
                        comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                    )
                    new = new.with_changes(comma=comma)
            args.append(new)
        return call.with_changes(args=args)


def _atomic(node: cst.CSTNode) -> bool:
    if isinstance(node, _ATOMIC):
        return True
    return bool(getattr(node, "lpar", None))


# -- helpers over the analysed module -----------------------------------------------------
def eps_for(dtype: str) -> float | None:
    return EPS.get(dtype)


def eps_num(dtype: str) -> Num | None:
    e = eps_for(dtype)
    return None if e is None else Num(EPS_TEXT[e], e)


def origin(ctx: Context, node: cst.BaseExpression, scope: Scope, order: int, depth: int = 0):
    """Follow names to the call that produced ``node``: (node, scope, order, name or None)."""
    name = None
    while depth < 8 and isinstance(node, cst.Name):
        found = ctx.ev.lookup(node.value, scope, order)
        if not isinstance(found, Binding) or found.value is None or found.index is not None:
            break
        name = name or (node.value, scope)
        node, scope, order = found.value, found.scope, found.at
        depth += 1
    return node, scope, order, name


def _op(ctx: Context, node) -> str | None:
    return ctx.op(node) if isinstance(node, cst.Call) else None


@dataclass
class Prob:
    """A probability traced back to its activation: sigmoid(z), 1 - sigmoid(z), softmax(z)."""

    kind: str  # sigmoid | softmax
    complement: bool
    logits: Src | None
    axis: Src | None
    folds: list[tuple[str, Scope]]


def trace_prob(ctx: Context, node: cst.BaseExpression, site: Site) -> Prob | None:
    """``node`` as sigmoid(z) / 1 - sigmoid(z) / softmax(z) with z reachable in the file."""
    folds: list[tuple[str, Scope]] = []
    complement = False
    cur, scope, order, name = origin(ctx, node, site.scope, site.order)
    if name:
        folds.append(name)
    if (
        isinstance(cur, cst.BinaryOperation)
        and isinstance(cur.operator, cst.Subtract)
        and ctx.ev.value(cur.left, scope, order).const == 1.0
    ):
        complement = True
        cur, scope, order, name = origin(ctx, cur.right, scope, order)
        if name:
            folds.append(name)
    op = _op(ctx, cur)
    if op not in ("sigmoid", "softmax") or (complement and op == "softmax"):
        return None
    z = first_arg(cur, "x", "logits", "features")
    if z is None or any(a.star for a in cur.args):
        return None
    axis = bind(op, cur).params.get("axis") if op == "softmax" else None
    return Prob(
        op,
        complement,
        Src(z, scope, order),
        Src(axis, scope, order) if axis is not None else None,
        folds,
    )


def movable(ctx: Context, src: Src, site: Site) -> bool:
    """``src`` means the same at ``site``: every name resolves to the same binding there, and it
    calls nothing but TF ops (no duplicated model call)."""
    if src.scope is site.scope and src.order == site.order:
        return True
    ok = True

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            nonlocal ok
            a = ctx.ev.lookup(n.value, src.scope, src.order)
            b = ctx.ev.lookup(n.value, site.scope, site.order)
            if a is not b:
                ok = False

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            nonlocal ok
            if ctx.info.imports.resolve(n) is None and not _self_attr(n):
                ok = False
            return True

        def visit_Call(self, n: cst.Call) -> None:
            nonlocal ok
            if ctx.op(n) is None:
                ok = False

    src.node.visit(V())
    return ok and (
        src.scope is site.scope or _enclosing_function(src.scope) is _enclosing_function(site.scope)
    )


def _self_attr(n: cst.Attribute) -> bool:
    return isinstance(n.value, cst.Name) and n.value.value == "self"


def _enclosing_function(scope: Scope) -> Scope | None:
    s: Scope | None = scope
    while s is not None and s.kind == "class":
        s = s.parent
    return s


def _here(node: cst.BaseExpression, site: Site) -> Src:
    return Src(node, site.scope, site.order)


def _log_arg(call: cst.Call) -> cst.BaseExpression | None:
    return first_arg(call, "x", "input")


# -- the rewrites, by the name a rule's recipe gives (the plan's rule is set by plan_for) ----------------------------------------------------------------------
def _log_of_prob(ctx: Context, site: Site, prob: Prob) -> Any | None:
    """log(p) in logits form, or None."""
    if prob.logits is None or not movable(ctx, prob.logits, site):
        return None
    if prob.kind == "sigmoid":
        return Call("log_sigmoid", [Neg(prob.logits) if prob.complement else prob.logits])
    kw = [("axis", prob.axis)] if prob.axis is not None else []
    return Call("log_softmax", [prob.logits], kw)


def fix_log_of_probability(ctx: Context, hit: Hit) -> Plan | None:
    site, call = hit.site, hit.node
    x = _log_arg(call)
    if x is None:
        return None
    prob = trace_prob(ctx, x, site)
    if prob is None:
        return None
    new = _log_of_prob(ctx, site, prob)
    if new is None:
        return None
    fused = "tf.math.log_sigmoid" if prob.kind == "sigmoid" else "tf.nn.log_softmax"
    return Plan("", "safe", f"use {fused} on the logits", [Edit(call, new)], prob.folds)


def fix_log_epsilon(ctx: Context, hit: Hit) -> Plan | None:
    site, call = hit.site, hit.node
    x = _log_arg(call)
    if x is None:
        return None
    rest, eps = split_eps(ctx, x, site)
    if eps is None:
        return None
    prob = trace_prob(ctx, rest, site)
    if prob is not None:
        new = _log_of_prob(ctx, site, prob)
        if new is not None:
            fused = "tf.math.log_sigmoid" if prob.kind == "sigmoid" else "tf.nn.log_softmax"
            return Plan(
                "",
                "safe",
                f"drop the epsilon and use {fused} on the logits",
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
    if v.prob:
        new = _clip_prob_expr(ctx, rest, site, e)
        what = f"clip the probability to [{e.text}, 1 - {e.text}]"
    else:
        new = Call("maximum", [_here(rest, site), e])
        what = f"clamp with maximum(x, {e.text})"
    return Plan("", "unsafe", what, [Edit(x, new)])


def _eps_text(ctx: Context, x: cst.BaseExpression, site: Site, eps: float) -> str:
    for term, sign in additive_terms(x):
        if sign > 0 and ctx.val(term, site).const == eps:
            return ctx.code(term).strip()
    return repr(eps)


def _clip_prob_expr(ctx: Context, rest: cst.BaseExpression, site: Site, e: Num):
    """clip(p) for p, 1 - clip(p) for 1 - p."""
    bound = Bin("-", Num("1", 1.0), e)
    terms = additive_terms(rest)
    if (
        len(terms) == 2
        and terms[0][1] > 0
        and terms[1][1] < 0
        and ctx.val(terms[0][0], site).const == 1.0
    ):
        return Bin("-", Num("1", 1.0), Call("clip_by_value", [_here(terms[1][0], site), e, bound]))
    return Call("clip_by_value", [_here(rest, site), e, bound])


# --- TNL103: hand-written cross-entropy ---------------------------------------------------------
@dataclass
class _Term:
    sign: int
    coef: list[cst.BaseExpression]  # constant factors
    label: cst.BaseExpression | None
    label_complement: bool
    log_call: cst.Call
    prob: Prob | None


def _factors(node: cst.BaseExpression, sign: int = 1) -> tuple[int, list[cst.BaseExpression]]:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        s, f = _factors(node.expression, sign)
        return -s, f
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        s1, f1 = _factors(node.left, sign)
        s2, f2 = _factors(node.right, 1)
        return s1 * s2, f1 + f2
    return sign, [node]


def _term(ctx: Context, node: cst.BaseExpression, sign: int, site: Site) -> _Term | None:
    sign, factors = _factors(node, sign)
    logs = [f for f in factors if isinstance(f, cst.Call) and ctx.op(f) == "log"]
    if len(logs) != 1:
        return None
    log_call = logs[0]
    arg = _log_arg(log_call)
    if arg is None:
        return None
    rest, _ = split_eps(ctx, arg, site)
    coef, labels = [], []
    for f in factors:
        if f is log_call:
            continue
        c = ctx.val(f, site).const
        if c is not None:
            if c <= 0:
                return None
            coef.append(f)
        else:
            labels.append(f)
    if len(labels) != 1:
        return None
    label = labels[0]
    complement = False
    inner = label
    if (
        isinstance(inner, cst.BinaryOperation)
        and isinstance(inner.operator, cst.Subtract)
        and ctx.val(inner.left, site).const == 1.0
    ):
        complement, inner = True, inner.right
    return _Term(sign, coef, inner, complement, log_call, trace_prob(ctx, rest, site))


def _code(ctx: Context, node) -> str:
    return ctx.code(node).strip().strip("()").replace(" ", "")


def _coef_ir(ctx: Context, t: _Term, site: Site):
    if not t.coef:
        return Num("1", 1.0), 1.0
    value = 1.0
    ir = None
    for f in t.coef:
        value *= ctx.val(f, site).const
        ir = _here(f, site) if ir is None else Bin("*", ir, _here(f, site))
    return ir, value


def _xent_terms(ctx: Context, node: cst.BaseExpression, site: Site):
    """(sign, xent IR) for an elementwise sum of label * log(prob) terms, or None."""
    terms = []
    for t, s in additive_terms(node):
        term = _term(ctx, t, s, site)
        if term is None:
            return None
        terms.append(term)
    if not terms or any(t.prob is None or t.prob.logits is None for t in terms):
        return None
    if not all(movable(ctx, t.prob.logits, site) for t in terms):
        return None
    logits = {_code(ctx, t.prob.logits.node) for t in terms}
    labels = {_code(ctx, t.label) for t in terms}
    if len(logits) != 1 or len(labels) != 1:
        return None
    z = terms[0].prob.logits
    y = _here(terms[0].label, site)
    folds = [f for t in terms for f in t.prob.folds]
    if len(terms) == 2 and all(t.prob.kind == "sigmoid" for t in terms):
        pos = [t for t in terms if not t.label_complement and not t.prob.complement]
        neg = [t for t in terms if t.label_complement and t.prob.complement]
        if len(pos) != 1 or len(neg) != 1 or pos[0].sign != neg[0].sign:
            return None
        a_ir, a = _coef_ir(ctx, pos[0], site)
        b_ir, b = _coef_ir(ctx, neg[0], site)
        sign = -pos[0].sign  # loss = sign * (a*y*-log s + b*(1-y)*-log(1-s))
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
        return sign, xent, scale, folds, "elementwise"
    if len(terms) == 1 and terms[0].prob.kind == "softmax" and not terms[0].label_complement:
        t = terms[0]
        a_ir, a = _coef_ir(ctx, t, site)
        xent = Call("softmax_xent", [], [("labels", y), ("logits", z)])
        return -t.sign, xent, (None if a == 1.0 else a_ir), folds, ("class", t.prob.axis)
    return None


def _match_xent(ctx: Context, node: cst.BaseExpression, site: Site):
    """(IR, folds) for a whole cross-entropy expression ``node``, or None."""
    sign = 1
    inner = node
    while isinstance(inner, cst.UnaryOperation) and isinstance(inner.operator, cst.Minus):
        sign, inner = -sign, inner.expression
    op = _op(ctx, inner)
    if op in ("reduce_sum", "reduce_mean"):
        arg0 = first_arg(inner, "input_tensor")
        if arg0 is None or any(a.star for a in inner.args):
            return None
        res = _xent_terms(ctx, arg0, site)
        if res is None:
            sub = _match_xent(ctx, arg0, site)
            if sub is None:
                return None
            ir, folds = sub
            return _wrap_reduce(ctx, inner, op, ir, sign, site), folds
        s, xent, scale, folds, shape = res
        reduced = reduce_args(ctx, inner)
        if reduced is None:
            return None
        axis, keepdims = reduced
        if shape != "elementwise":  # softmax: the class axis is summed by the fused op
            if op != "reduce_sum" or keepdims is not None:
                return None
            soft_axis = shape[1]
            soft_axis_code = _code(ctx, soft_axis.node) if soft_axis is not None else "-1"
            if axis is not None:
                # the sum runs over the softmax's own axis (the same literal): the fused op
                # computes it per example; any other axis is a different quantity
                if _code(ctx, axis) != soft_axis_code or not _int_literal(soft_axis_code):
                    return None
                if soft_axis_code != "-1" and soft_axis is not None:
                    xent = Call(xent.op, xent.args, [*xent.kw, ("axis", soft_axis)])
                ir = xent
            else:
                if soft_axis_code != "-1":
                    return None
                ir = Call("reduce_sum", [xent])  # every axis: the per-example losses, summed
        else:
            ir = _wrap_reduce(ctx, inner, op, xent, 1, site)
        return _signed(ir, s * sign, scale), folds
    res = _xent_terms(ctx, inner, site)
    if res is None:
        return None
    s, xent, scale, folds, shape = res
    if shape != "elementwise":
        return None
    return _signed(xent, s * sign, scale), folds


def _int_literal(code: str) -> bool:
    return code.lstrip("-").isdigit()


def _wrap_reduce(ctx: Context, call: cst.Call, op: str, ir, sign: int, site: Site):
    del op
    out = Reuse(call, ir, site.scope, site.order)
    return Neg(out) if sign < 0 else out


def _signed(ir, sign: int, scale):
    if scale is not None:
        ir = Bin("*", scale, ir)
    return Neg(ir) if sign < 0 else ir


def fix_cross_entropy(ctx: Context, hit: Hit) -> Plan | None:
    site = hit.site
    parents = parent_map(site.statement)
    node: cst.CSTNode | None = hit.node
    best = None
    while node is not None and node is not site.statement:
        if isinstance(node, cst.BaseExpression):
            m = _match_xent(ctx, node, site)
            if m is not None:
                best = (node, m)
        node = parents.get(id(node))
    if best is not None:
        node, (ir, folds) = best
        return Plan(
            "",
            "safe",
            "use the fused *_cross_entropy_with_logits on the logits",
            [Edit(node, ir)],
            folds,
        )
    # no logits: clip every probability under a log in the cross-entropy (unsafe)
    return _clip_fallback(ctx, hit)


def _clip_fallback(ctx: Context, hit: Hit) -> Plan | None:
    site = hit.site
    dtype = ctx.dtype(site)
    e = eps_num(dtype)
    if e is None:
        return None
    edits = []
    seen = set()
    parents = parent_map(site.statement)
    top: cst.CSTNode = hit.node
    while id(top) in parents and isinstance(parents[id(top)], cst.BinaryOperation):
        top = parents[id(top)]
    for t, s in additive_terms(top) if isinstance(top, cst.BaseExpression) else []:
        _sign, factors = _factors(t, s)
        for f in factors:
            if isinstance(f, cst.Call) and ctx.op(f) == "log" and id(f) not in seen:
                seen.add(id(f))
                arg = _log_arg(f)
                rest, _ = split_eps(ctx, arg, site)
                v = ctx.val(rest, site)
                if not v.prob or v.guarded:
                    continue
                edits.append(Edit(arg, _clip_prob_expr(ctx, rest, site, e)))
    if not edits:
        return None
    return Plan("", "unsafe", f"clip the probabilities to [{e.text}, 1 - {e.text}]", edits)


# --- TNL105 / TNL106 -------------------------------------------------------------------------
def fix_log1p_expm1(ctx: Context, hit: Hit) -> Plan | None:
    site, node = hit.site, hit.node
    if isinstance(node, cst.Call):  # log(1 + x)
        x = _log_arg(node)
        terms = additive_terms(x) if x is not None else []
        rest = [t for t, s in terms if ctx.val(t, site).const is None]
        if len(terms) != 2 or len(rest) != 1:
            return None
        inner = rest[0]
        if (
            isinstance(inner, cst.Call)
            and ctx.op(inner) == "exp"
            and first_arg(inner, "x") is not None
        ):
            # log(1 + exp(z)) is softplus(z); log1p(exp(z)) would still overflow past z = 88.7
            return Plan(
                "",
                "safe",
                "use tf.math.softplus(z)",
                [Edit(node, Call("softplus", [_here(first_arg(inner, "x"), site)]))],
            )
        return Plan(
            "",
            "safe",
            "use tf.math.log1p(x)",
            [Edit(node, Call("log1p", [_here(inner, site)]))],
        )
    if isinstance(node, cst.BinaryOperation):  # exp(x) - 1
        x = first_arg(node.left, "x")
        if x is None:
            return None
        return Plan(
            "", "safe", "use tf.math.expm1(x)", [Edit(node, Call("expm1", [_here(x, site)]))]
        )
    return None


def reduce_args(ctx: Context, call: cst.Call):
    """(axis, keepdims) of a reduction in any spelling (``reduction_indices=``, ``keep_dims=``,
    positional, Keras backend), or None when the call has an argument we do not model."""
    op = ctx.op(call)
    if op is None:
        return None
    bound = bind(op, call)
    if bound.unknown:
        return None
    return bound.params.get("axis"), bound.params.get("keepdims")


def _reduce_kw(ctx: Context, call: cst.Call, scope: Scope, order: int):
    kw = []
    axis, keepdims = reduce_args(ctx, call) or (None, None)
    if axis is not None:
        kw.append(("axis", Src(axis, scope, order)))
    if keepdims is not None:
        kw.append(("keepdims", Src(keepdims, scope, order)))
    return kw


def fix_logsumexp(ctx: Context, hit: Hit) -> Plan | None:
    site, call = hit.site, hit.node
    x = _log_arg(call)
    if x is None:
        return None
    folds = []
    s_node, scope, order, name = origin(ctx, x, site.scope, site.order)
    if name:
        folds.append(name)
    if _op(ctx, s_node) != "reduce_sum" or any(a.star for a in s_node.args):
        return None
    e_node, escope, eorder, ename = origin(ctx, first_arg(s_node, "input_tensor"), scope, order)
    if ename:
        folds.append(ename)
    if _op(ctx, e_node) != "exp":
        return None
    inner = first_arg(e_node, "x")
    if inner is None:
        return None
    src = Src(inner, escope, eorder)
    if reduce_args(ctx, s_node) is None:
        return None
    kw = _reduce_kw(ctx, s_node, scope, order)
    if not movable(ctx, src, site) or not all(movable(ctx, v, site) for _, v in kw):
        return None
    return Plan(
        "",
        "safe",
        "use tf.reduce_logsumexp(x)",
        [Edit(call, Call("reduce_logsumexp", [src], kw))],
        folds,
    )


# --- TNL301: manual softmax --------------------------------------------------------------------
def fix_fused_softmax(ctx: Context, hit: Hit) -> Plan | None:
    site = hit.site
    node = site.node
    if not isinstance(node, cst.BinaryOperation) or not isinstance(node.operator, cst.Divide):
        return None
    folds = []
    num, nscope, norder, nname = origin(ctx, node.left, site.scope, site.order)
    if _op(ctx, num) != "exp":
        return None
    den = node.right
    if _op(ctx, den) != "reduce_sum":
        return None
    d_in, _dscope, _dorder, dname = origin(
        ctx, first_arg(den, "input_tensor"), site.scope, site.order
    )
    if d_in is not num and not (_op(ctx, d_in) == "exp" and _code(ctx, d_in) == _code(ctx, num)):
        return None
    for n in (nname, dname):
        if n and n not in folds:
            folds.append(n)
    axis, keepdims = reduce_args(ctx, den) or (None, None)
    if axis is None or keepdims is None or ctx.code(keepdims).strip() != "True":
        return None
    x = first_arg(num, "x")
    src = Src(x, nscope, norder)
    if not movable(ctx, src, site):
        return None
    new = Call("softmax", [src], [("axis", _here(axis, site))])
    return Plan("", "safe", "use tf.nn.softmax", [Edit(node, new)], folds)


# --- TNL20x ---------------------------------------------------------------------------------
def fix_divide_no_nan(ctx: Context, hit: Hit) -> Plan | None:
    site, node = hit.site, hit.node
    if isinstance(node, cst.BinaryOperation):
        num, den = node.left, node.right
    else:
        num, den = ctx.arg(node, 0, "x"), ctx.arg(node, 1, "y")
    if num is None or den is None:
        return None
    if not has_tf_provenance(ctx, site, num, den) or guarded(ctx, site, node, num, den):
        return None  # Python/numpy arithmetic, or a guard that already handles d == 0
    new = Call("divide_no_nan", [_here(num, site), _here(den, site)])
    return Plan(
        "",
        "unsafe",
        "use tf.math.divide_no_nan (0 where the denominator is 0)",
        [Edit(node, new)],
    )


def fix_clamped_sqrt(ctx: Context, hit: Hit) -> Plan | None:
    site, call = hit.site, hit.node
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
        [Edit(x, Call("maximum", [_here(inner, site), e]))],
    )


def fix_safe_norm(ctx: Context, hit: Hit) -> Plan | None:
    site, call = hit.site, hit.node
    e = eps_num(ctx.dtype(site))
    x = first_arg(call, "tensor", "input_tensor", "x")
    if x is None or e is None or any(a.star for a in call.args):
        return None
    if result_tested(ctx, site):
        return None  # the code tests the norm against 0 later: a clamp defeats that guard
    op = ctx.op(call)
    kw = []
    bound = bind(op or "", call)
    if op is None or bound.unknown:
        return None
    ord_ = bound.params.get("ord")
    if ord_ is not None and ctx.code(ord_).strip() not in (
        "2",
        "2.0",
        "'euclidean'",
        '"euclidean"',
    ):
        return None  # another norm: the safe Euclidean form would change its value
    axis, keepdims = bound.params.get("axis"), bound.params.get("keepdims")
    if op == "norm" and axis is not None and isinstance(axis, (cst.Tuple, cst.List)):
        return None  # matrix norms: not the Euclidean norm of a vector
    if axis is not None:
        kw.append(("axis", _here(axis, site)))
    if keepdims is not None:
        kw.append(("keepdims", _here(keepdims, site)))
    new = Call(
        "sqrt", [Call("maximum", [Call("reduce_sum", [Call("square", [_here(x, site)])], kw), e])]
    )
    return Plan(
        "",
        "unsafe",
        "a safe norm: sqrt(maximum(reduce_sum(square(d)), eps))",
        [Edit(call, new)],
    )


# the inner where's stand-in, inside the op's domain (1.0 for the others)
_SUBSTITUTE = {"acos": "zeros", "asin": "zeros", "atanh": "zeros"}


def pure(ctx: Context, node: cst.CSTNode) -> bool:
    """Only TF/Keras calls, no walrus, no lambda: safe to evaluate twice or to drop."""
    ok = True

    class V(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            nonlocal ok
            if ctx.op(n) is None:
                ok = False

        def visit_NamedExpr(self, n) -> None:
            nonlocal ok
            ok = False

        def visit_Lambda(self, n) -> None:
            nonlocal ok
            ok = False

    node.visit(V())
    return ok


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
    sub = Call(_SUBSTITUTE.get(op, "ones"), [_here(x, site)])
    pair = [_here(x, site), sub] if index == 1 else [sub, _here(x, site)]
    new = Call("where", [_here(cond, site), *pair])
    return Plan(
        "",
        "safe",
        "the double-where form: make the input safe with an inner tf.where",
        [Edit(x, new)],
    )


# --- TNL403: optimizer epsilon ------------------------------------------------------------------
def fix_optimizer_epsilon(ctx: Context, hit: Hit) -> Plan | None:
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


# --- suggestions ----------------------------------------------------------------------------
def suggest_lower_learning_rate(ctx: Context, hit: Hit) -> Plan:
    return Plan(
        "",
        "suggestion",
        "lower the learning rate (e.g. 1e-3), or make the output layer linear and use "
        "from_logits=True / *_with_logits; never applied automatically",
    )


def suggest_from_logits(ctx: Context, hit: Hit) -> Plan:
    return Plan(
        "",
        "suggestion",
        "make the last layer linear and pass from_logits=True (or pass the pre-activation "
        "logits to *_with_logits); it changes the model's outputs, so it is never applied",
    )


FIXERS: dict[str, Callable[[Context, Hit], Plan | None]] = {
    "log_of_probability": fix_log_of_probability,
    "log_epsilon": fix_log_epsilon,
    "cross_entropy": fix_cross_entropy,
    "log1p_expm1": fix_log1p_expm1,
    "logsumexp": fix_logsumexp,
    "divide_no_nan": fix_divide_no_nan,
    "clamped_sqrt": fix_clamped_sqrt,
    "safe_norm": fix_safe_norm,
    "fused_softmax": fix_fused_softmax,
    "double_where": fix_double_where,
    "optimizer_epsilon": fix_optimizer_epsilon,
    "lower_learning_rate": suggest_lower_learning_rate,
    "from_logits": suggest_from_logits,
}


def rewrite(name: str):
    """Register a rewrite under the name a recipe gives (``Recipe(fixer=name)``): a rule's
    family module can declare its rewrite beside its check."""

    def register(fn):
        if FIXERS.get(name, fn) is not fn:
            raise ValueError(f"two rewrites named {name!r}")
        FIXERS[name] = fn
        return fn

    return register


def fixable(code: str) -> bool:
    """The rule's recipe (rules/recipes.py) names a rewrite of this module."""
    return recipe_for(code).fixer in FIXERS


def fixable_codes() -> frozenset[str]:
    return frozenset(code for code in RECIPES if fixable(code))


def plan_for(ctx: Context, hit: Hit, code: str) -> Plan | None:
    """The rewrite the rule's recipe names, applied to ``hit``; the plan carries ``code``."""
    fn = FIXERS.get(recipe_for(code).fixer)
    if fn is None:
        return None
    try:
        plan = fn(ctx, hit)
    except (
        RecursionError,
        cst.ParserSyntaxError,
        ValueError,
        TypeError,
        AttributeError,
        IndexError,
    ):
        return None
    if plan is not None:
        plan.rule = code
    return plan
