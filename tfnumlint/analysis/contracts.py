"""Contracts a library declares for the inputs of its API methods (issue 11).

A distribution's ``log_prob(x)`` or a bijector's ``inverse(y)`` is called by the library's
user, and the library says, in its own code, which values it accepts.  A witness outside that
contract is a misuse by the caller, not a hazard, and the verdict may say so from the code
itself (refuted), not from a name:

- **sample checks**: a class method ``_sample_control_dependencies(self, x)`` asserts what a
  sample passed to the class's density methods (:data:`SAMPLE_METHODS`: ``_log_prob``,
  ``_cdf``...) must be when the user asks for validation (``validate_args``);
  ``assert_non_negative(x)`` there bounds the first parameter of ``_log_prob(self, x)``;
- **a bijector's image**: ``_inverse(y)`` and ``_inverse_log_det_jacobian(y)`` receive values in
  the image of the class's ``_forward``.  Known when the forward's returns have a static range
  (``tanh(x)`` is in [-1, 1]) or are an interval map ``lo + (hi - lo) * s`` / ``hi - (hi - lo)
  * s`` of a value ``s`` in [0, 1] between two attributes (``y`` then lies between them).  Only
  the forward returns that can pair with the finding's branch count (an ``if self.flag: return``
  in both methods pairs by its test); any return of unknown range gives nothing.

Plain data out (bounds and relations by input name); ``analysis/domain_code.py`` turns them into the
probe's domains.  Static only: no TensorFlow, no execution of the analysed code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import libcst as cst

from .call_ranges import call_range
from .invariants import CONVERSIONS, attr_key, parameter_assertions
from .module import Scope
from .names import children as child_nodes
from .names import dotted_name

# Methods whose first parameter is a sample the public API checks with the class's
# `_sample_control_dependencies` when validation is on.
SAMPLE_METHODS = frozenset(
    {"_log_prob", "_prob", "_cdf", "_log_cdf", "_survival_function", "_log_survival_function",
     "_unnormalized_log_prob", "_log_prob_with_logits"}
)  # fmt: skip
SAMPLE_CHECK = "_sample_control_dependencies"
# Methods that receive a point of the forward's image.
INVERSE_METHODS = frozenset({"_inverse", "_inverse_log_det_jacobian"})
FORWARD = "_forward"


@dataclass(frozen=True)
class Bound:
    """``name`` lies in [lo, hi] (lo excluded when ``lo_open``), for the reason ``why``."""

    name: str
    lo: float
    lo_open: bool
    hi: float
    why: str


@dataclass(frozen=True)
class Between:
    """``name`` lies between the class attributes of keys ``low`` and ``high``."""

    name: str
    low: str
    high: str
    why: str


def _method(scope: Scope | None) -> Scope | None:
    while scope is not None and not (scope.kind == "function" and scope.cls is not None):
        scope = scope.parent
    return scope


def _first_param(fn: Scope) -> str | None:
    params = [p for p in fn.params if p != fn.self_name]
    return params[0] if params else None


def sample_bounds(scope: Scope | None) -> list[Bound]:
    """What the class's sample check asserts about the sample a density method receives."""
    fn = _method(scope)
    if fn is None or fn.name not in SAMPLE_METHODS or fn.cls is None:
        return []
    check = fn.cls.method_scopes.get(SAMPLE_CHECK)
    sample, checked = _first_param(fn), _first_param(check) if check is not None else None
    if check is None or sample is None or checked is None:
        return []
    asserted = parameter_assertions(check).get(checked, [])
    return [
        Bound(sample, lo, lo_open, hi, f"{why} (the sample check `validate_args` runs)")
        for lo, lo_open, hi, why in asserted
    ]


# -- a bijector's image ---------------------------------------------------------------------

Condition = frozenset[tuple[str, bool]]  # (code of an `if` test, the outcome taken)


def _code(node: cst.CSTNode) -> str:
    return " ".join(cst.Module([]).code_for_node(node).split())


def _returns_in(stmts, cond: Condition) -> list[tuple[Condition, cst.BaseExpression]] | None:
    """The returns of a straight body, each with the `if` outcomes it runs under; None when a
    return sits where this walk does not follow (a loop, a `with`, an `else`)."""
    out: list[tuple[Condition, cst.BaseExpression]] = []
    for stmt in stmts:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Return) and small.value is not None:
                    out.append((cond, small.value))
                    return out
            continue
        if isinstance(stmt, cst.If) and stmt.orelse is None:
            test = _code(stmt.test)
            inner = _returns_in(stmt.body.body, cond | {(test, True)})
            if inner is None:
                return None
            out += inner
            if inner and _ends_in_return(stmt.body.body):
                cond = cond | {(test, False)}
            continue
        if any(isinstance(n, cst.Return) for n in _walk(stmt)):
            return None
    return out


def _ends_in_return(stmts) -> bool:
    last = stmts[-1] if stmts else None
    return isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return)


def _walk(node: cst.CSTNode):
    yield node
    for child in child_nodes(node):
        yield from _walk(child)


def _condition_of(fn: Scope, statement: cst.CSTNode) -> Condition | None:
    """The `if` outcomes the statement of a finding in ``fn`` runs under (same walk)."""
    cond: Condition = frozenset()
    body = fn.node.body.body if isinstance(fn.node, cst.FunctionDef) else []
    for stmt in body:
        inside = any(n is statement for n in _walk(stmt))
        if isinstance(stmt, cst.If) and stmt.orelse is None:
            test = _code(stmt.test)
            if inside:
                return cond | {(test, True)}
            if _ends_in_return(stmt.body.body):
                cond = cond | {(test, False)}
            continue
        if inside:
            return cond
    return None


def _compatible(a: Condition, b: Condition) -> bool:
    return not any((test, not taken) in b for test, taken in a)


def _resolve(node: cst.BaseExpression, fn: Scope) -> cst.BaseExpression:
    """Follow a local name bound once, and conversions (``tf.convert_to_tensor(v)``)."""
    for _ in range(6):
        if isinstance(node, cst.Name):
            bindings = fn.bindings.get(node.value) or []
            if len(bindings) == 1 and bindings[0].value is not None and bindings[0].index is None:
                node = bindings[0].value
                continue
        if (
            isinstance(node, cst.Call)
            and dotted_name(node.func).rsplit(".", 1)[-1] in CONVERSIONS
            and node.args
        ):
            node = node.args[0].value
            continue
        return node
    return node


def _key(node: cst.BaseExpression, fn: Scope) -> str | None:
    return attr_key(_resolve(node, fn), fn.self_name)


def _is_unit(node: cst.BaseExpression, ctx, fn: Scope, order: int) -> bool:
    """A value in [0, 1]: its static range says so, or it is a call of a library function with
    that range (``special_math.ndtr(x)``).  A project helper's name is no evidence (issue 22)."""
    node = _resolve(node, fn)
    found = call_range(ctx, node)
    if found is not None and found[0] >= 0.0 and found[2] <= 1.0:
        return True
    val = ctx.ev.value(node, fn, order)
    return val.lo >= 0.0 and val.hi <= 1.0


def _interval_map(node, ctx, fn: Scope, order: int) -> tuple[str, str] | None:
    """``lo + (hi - lo) * s`` or ``hi - (hi - lo) * s`` with ``s`` in [0, 1] (through locals and
    ``tf.where`` of two such maps): the attribute keys (lo, hi)."""
    node = _resolve(node, fn)
    if isinstance(node, cst.Call) and dotted_name(node.func).rsplit(".", 1)[-1] == "where":
        args = [a.value for a in node.args]
        if len(args) == 3:
            left = _interval_map(args[1], ctx, fn, order)
            right = _interval_map(args[2], ctx, fn, order)
            return left if left is not None and left == right else None
        return None
    if not isinstance(node, cst.BinaryOperation) or not isinstance(
        node.operator, (cst.Add, cst.Subtract)
    ):
        return None
    base = _key(node.left, fn)
    scaled = _resolve(node.right, fn)
    if base is None or not isinstance(scaled, cst.BinaryOperation):
        return None
    if not isinstance(scaled.operator, cst.Multiply):
        return None
    for width, unit in ((scaled.left, scaled.right), (scaled.right, scaled.left)):
        diff = _resolve(width, fn)
        if not (isinstance(diff, cst.BinaryOperation) and isinstance(diff.operator, cst.Subtract)):
            continue
        hi, lo = _key(diff.left, fn), _key(diff.right, fn)
        if hi is None or lo is None or not _is_unit(unit, ctx, fn, order):
            continue
        expected = lo if isinstance(node.operator, cst.Add) else hi
        if base == expected:
            return lo, hi
    return None


def inverse_image(ctx, scope: Scope | None, statement: cst.CSTNode) -> list[Bound | Between]:
    """Where the first parameter of a bijector's ``_inverse`` lies: the image of ``_forward``
    over the returns that can pair with the finding's branch."""
    fn = _method(scope)
    if fn is None or fn.name not in INVERSE_METHODS or fn.cls is None:
        return []
    forward = fn.cls.method_scopes.get(FORWARD)
    y = _first_param(fn)
    if forward is None or y is None or not isinstance(forward.node, cst.FunctionDef):
        return []
    here = _condition_of(fn, statement)
    returns = _returns_in(forward.node.body.body, frozenset())
    if here is None or not returns:
        return []
    paired = [expr for cond, expr in returns if _compatible(cond, here)]
    order = 1 << 30  # the end of the forward: every local binding is in
    why = "its value is an output of `_forward` (the inverse receives the forward's image)"
    maps = [_interval_map(expr, ctx, forward, order) for expr in paired]
    if paired and all(m is not None and m == maps[0] for m in maps):
        lo, hi = maps[0]  # type: ignore[misc]
        return [Between(y, lo, hi, why)]
    lo, hi = math.inf, -math.inf
    for expr in paired:
        val = ctx.ev.value(expr, forward, order)
        if math.isinf(val.lo) and math.isinf(val.hi):
            return []
        lo, hi = min(lo, val.lo), max(hi, val.hi)
    if not paired or (math.isinf(lo) and math.isinf(hi)):
        return []
    return [Bound(y, lo, False, hi, why)]
