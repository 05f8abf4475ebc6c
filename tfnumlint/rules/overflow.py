"""TNL30x: exponentials that overflow, and tf.where branches that poison the gradient."""

from __future__ import annotations

import math
from dataclasses import dataclass

import libcst as cst

from .. import ops
from ..analysis.context import Context, Hit
from ..analysis.epsilons import first_arg, split_eps
from ..analysis.module import Binding, Scope, Site
from ..analysis.names import children as child_nodes
from ..analysis.names import dotted_name
from ..analysis.values import LINEAR_KINDS
from .common import EXP_OVERFLOW, underflows
from .graph import Hazard as GraphHazard
from .graph import danger_test, graph_rule, is_danger, producer_text, range_text, where_op
from .registry import rule

# Producers with no upper bound in practice: raw linear outputs, negations, differences.
_COMPUTED = LINEAR_KINDS | {"diff", "neg"}


@rule("TNL301", ops={"exp"})
def exp_overflow(site: Site[cst.Call], ctx: Context):
    x = first_arg(site.node, "x")
    if x is None:
        return
    dtype = ctx.dtype(site)
    limit = EXP_OVERFLOW[dtype]
    v = ctx.val(x, site)
    if v.hi <= limit:
        return
    if v.kind not in _COMPUTED and not (dtype == "float16" and v.tensor):
        return
    if (v.kind == "diff" and max_shifted(x, ctx, site)) or v.log_space:
        return  # a max-shifted value, or a log-likelihood whose exp is the point
    yield Hit(
        site.node,
        f"exp of {v.desc or 'an unbounded value'} overflows to inf once it passes {limit} in "
        f"{dtype}; shift by the max (x - reduce_max(x)) or use the fused log-space op",
        site,
    )


def max_shifted(node: cst.BaseExpression, ctx: Context | None = None, site=None) -> bool:
    """x - max_x, x - m_max, x - gather(segment_max(x), ids), ...: a shift by a maximum."""
    right = None
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
        right = node.right
    elif isinstance(node, cst.Call) and len(node.args) == 2:
        right = node.args[1].value
    return right is not None and _is_max(right, ctx, site, 0)


# Calls that pass their first argument's maximum through unchanged (a shape or a gather).
_MAX_WRAPPERS = ops.VALUE_PRESERVING | {"broadcast_to", "repeat"}  # + names not registered


# TF, NumPy and array-method spellings of a maximum the registry does not hold as an op
_MAX_CALLS = frozenset({"segment_max", "unsorted_segment_max", "amax", "nanmax", "max"})


def _is_max(node: cst.BaseExpression, ctx: Context | None, site, depth: int) -> bool:
    """The value is a maximum by its producer (``reduce_max``, ``segment_max``, ``x.max()``),
    through shape wrappers and local bindings; never by a name (issue 22)."""
    if depth > 4:
        return False
    if isinstance(node, cst.Subscript):
        return _is_max(node.value, ctx, site, depth + 1)
    if isinstance(node, cst.Call):
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
        if _computes_max(node, ctx) or _made_from_max(func, ctx, site):
            return True
        if name in _MAX_WRAPPERS and node.args:
            return _is_max(node.args[0].value, ctx, site, depth + 1)
        if ctx is not None and ctx.op(node) == "where" and len(node.args) == 3:
            # where(is_finite(m), m, 0): a max, or a constant shift where the max is not finite
            branches = [a.value for a in node.args[1:]]
            return any(_is_max(b, ctx, site, depth + 1) for b in branches) and all(
                _is_max(b, ctx, site, depth + 1) or _literal(b) for b in branches
            )
        return False
    if isinstance(node, cst.Name) and ctx is not None and site is not None:
        found = ctx.ev.lookup(node.value, site.scope, site.order)
        value = getattr(found, "value", None)
        if isinstance(value, cst.BaseExpression) and getattr(found, "index", None) is None:
            # read the bound value where it was computed (`m = where(isfinite(m), m, 0)`)
            at = _At(found.scope, found.at) if isinstance(found, Binding) else site
            return _is_max(value, ctx, at, depth + 1)
    return False


@dataclass(frozen=True)
class _At:
    """Where a value is read: the scope and walk order a lookup uses."""

    scope: Scope
    order: int


def _literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation):
        node = node.expression
    if isinstance(node, cst.Call) and node.args:  # zeros_like(x), tf.constant(0.)
        return all(isinstance(a.value, (cst.Integer, cst.Float)) for a in node.args[:1]) or (
            dotted_name(node.func).rsplit(".", 1)[-1] in ("zeros_like", "ones_like")
        )
    return isinstance(node, (cst.Integer, cst.Float))


def _made_from_max(func: cst.BaseExpression, ctx: Context | None, site) -> bool:
    """A name bound to a factory given a max reduction (``reduce_max =
    _make_reduce_op(tf.reduce_max, pmax)``): the function it makes computes that max."""
    if ctx is None or site is None or not isinstance(func, cst.Name):
        return False
    found = ctx.ev.lookup(func.value, site.scope, site.order)
    value = getattr(found, "value", None)
    if not isinstance(value, cst.Call) or getattr(found, "index", None) is not None:
        return False
    return any(ctx.info.imports.op(a.value) == "reduce_max" for a in value.args)


def _computes_max(call: cst.Call, ctx: Context | None) -> bool:
    """A registered max reduction, or a TF/NumPy function or array method computing a max."""
    if ctx is None:
        return False
    op = ctx.op(call)
    if op is not None:
        return ops.REGISTRY[op].reduction == "max"
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in _MAX_CALLS:
        return False
    module = ctx.info.imports.path(func).split(".")[0]
    if not module:
        return func.attr.value == "max"  # `x.max()`: the array method
    return module in ("tensorflow", "numpy", "jax", "keras")


def _quotient(site: Site, ctx: Context):
    """(numerator, denominator) of ``a / b`` or ``tf.divide(a, b)`` (tf.div, tf.math.divide)."""
    node = site.node
    if isinstance(node, cst.BinaryOperation):
        return node.left, node.right
    return ctx.arg(node, 0, "x"), ctx.arg(node, 1, "y")


def _exp_call(ctx: Context, node: cst.BaseExpression | None) -> cst.Call | None:
    if isinstance(node, cst.Call) and ctx.op(node) == "exp":
        return node
    return None


@rule("TNL301", binops=(cst.Divide,), ops={"divide"})
def manual_softmax(site: Site, ctx: Context):
    """exp(x) / reduce_sum(exp(x)): every exp that can overflow is its own finding (clipping
    the numerator does not make the denominator's exp safe); the denominator's underflow to
    0 is TNL201's."""
    num, den = _quotient(site, ctx)
    if num is None or den is None:
        return
    n, d = ctx.val(num, site), ctx.val(den, site)
    if not (n.has_exp and d.exp_sum):
        return
    limit = EXP_OVERFLOW[ctx.dtype(site)]
    dtype = ctx.dtype(site)
    num_exp = _exp_call(ctx, num)
    if n.hi == math.inf:
        exp_call = num_exp or site.node
        if ctx.once("TNL301", exp_call):
            yield Hit(
                exp_call,
                f"softmax written with exp: exp(x) overflows past {limit} in {dtype} (inf / inf = "
                "NaN); use tf.nn.softmax, which subtracts the max first",
                site,
            )
    summed = first_arg(den, "input_tensor", "x") if isinstance(den, cst.Call) else None
    den_exp = _exp_call(ctx, summed)
    if den_exp is None or (num_exp is not None and ctx.code(num_exp) == ctx.code(den_exp)):
        return
    inner = first_arg(den_exp, "x")
    if inner is not None and ctx.val(inner, site).hi > limit and ctx.once("TNL301", den_exp):
        yield Hit(
            den_exp,
            f"softmax written with exp: the denominator's exp overflows past {limit} in {dtype} "
            "(x / inf = 0, inf / inf = NaN), whatever guards the numerator; use tf.nn.softmax",
            site,
        )


# Ops whose gradient is inf/NaN where a tf.where branch is not taken (`Op.unsafe_gradient`:
# log, division, pow and exp give NaN; sqrt, rsqrt and reciprocal turn the zero upstream
# gradient into 0).
_UNSAFE = ops.UNSAFE_GRADIENT


def _unsafe_inside(
    ctx: Context, node: cst.CSTNode, site: Site, depth: int = 0
) -> tuple[cst.BaseExpression, str] | None:
    """(input, op) of the first unsafe op in a where-branch whose input is not guarded."""
    if depth > 12:
        return None
    if isinstance(node, cst.Call):
        op = ctx.op(node)
        if op == "where":
            return None  # an inner where is the double-where guard
        if op in _UNSAFE:
            arg = ctx.arg(node, 1, "y") if op == "divide" else first_arg(node, "x")
            if op == "exp":
                v = ctx.val(arg, site) if arg is not None else None
                # an inner where is the double-where guard here too
                if (
                    arg is not None
                    and v is not None
                    and v.kind != "where"
                    and v.hi > EXP_OVERFLOW[ctx.dtype(site)]
                ):
                    return arg, op
            elif arg is not None and not _guarded(ctx, arg, site):
                return arg, op
        for a in node.args:
            found = _unsafe_inside(ctx, a.value, site, depth + 1)
            if found:
                return found
        return None
    if isinstance(node, cst.BinaryOperation):
        if (
            isinstance(node.operator, cst.Divide)
            and not _guarded(ctx, node.right, site)
            and ctx.val(node.right, site).const is None
        ):
            return node.right, "divide"
        return _unsafe_inside(ctx, node.left, site, depth + 1) or _unsafe_inside(
            ctx, node.right, site, depth + 1
        )
    if isinstance(node, cst.UnaryOperation):
        return _unsafe_inside(ctx, node.expression, site, depth + 1)
    return None


def _guarded(ctx: Context, node: cst.BaseExpression, site: Site) -> bool:
    if ctx.val(node, site).kind == "where":  # the inner where of the double-where form
        return True
    _, eps = split_eps(ctx, node, site)
    if eps is not None and not underflows(eps, ctx.dtype(site)):
        return True
    v = ctx.val(node, site)
    return v.guarded or v.positive or v.const is not None


def _names(node: cst.CSTNode | None) -> set[str]:
    """Every plain name and self.attr in an expression (bounded walk)."""
    out: set[str] = set()
    stack = [node] if node is not None else []
    budget = 400
    while stack and budget:
        budget -= 1
        n = stack.pop()
        if isinstance(n, cst.Name):
            out.add(n.value)
        elif isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name):
            out.add(f"{n.value.value}.{n.attr.value}")
            continue
        if isinstance(n, cst.Attribute):
            stack.append(n.value)
            continue
        stack.extend(child_nodes(n))
    return out


@rule("TNL302", ops={"where"})
def where_nan_gradient(site: Site[cst.Call], ctx: Context):
    call = site.node
    found = unsafe_where_branch(ctx, call, site)
    if found is not None:
        _index, _input, op = found
        yield Hit(
            call,
            f"tf.where evaluates {op}(...) on every element and only then selects: where that "
            "branch is not taken its inf/NaN still reaches the gradient (0 * inf = NaN); "
            "make the input safe first with an inner tf.where (the double-where form)",
            site,
        )


def unsafe_where_branch(
    ctx: Context, call: cst.Call, site: Site
) -> tuple[int, cst.BaseExpression, str] | None:
    """(argument index, the unsafe op's input, the op) of the first where-branch that applies
    an unsafe op to an unguarded input related to the condition, or None.

    The one predicate of TNL302: the rule reports it and the double-where rewrite
    (fix/domain.py) guards exactly that input."""
    condition = ctx.arg(call, 0, "condition")
    for index, keyword in ((1, "x"), (2, "y")):
        branch = ctx.arg(call, index, keyword)
        if branch is None:
            continue
        found = _unsafe_inside(ctx, branch, site)
        if found and _names(branch) & _names(condition):
            return index, found[0], found[1]
    return None


# ---------------------------------------------------------------- the same rules on model graphs


@graph_rule("TNL301", lambda h: is_danger(h) and danger_test(h) == "overflows")
def exp_overflow_op(h: GraphHazard) -> str:
    return (
        f"exp of an unbounded value: {where_op(h)} reads {producer_text(h)}, whose range with the "
        f"model's weights is {range_text(h)}; exp overflows to inf past {overflow_text(h)}"
    )


def overflow_text(h: GraphHazard) -> str:
    return "11.09 (float16)" if h.get("dtype") == "float16" else "88.72 (float32)"


@graph_rule("TNL302", lambda h: h.get("pattern") == "where")
def where_nan_gradient_op(h: GraphHazard) -> str:
    return (
        f"where-trap: the select {where_op(h)} hides the value of `{h.get('guarded')}` "
        f"({h.get('producer')}), whose {h.get('what')} reaches {h.get('zone')}, but not its "
        "gradient: 0 * inf = NaN flows back through the untaken branch; make the op's input "
        "safe with a second where"
    )
