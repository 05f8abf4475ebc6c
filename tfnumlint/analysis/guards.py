"""Guards around a hazard that keep its bad value from being used: a ``tf.where`` that selects
away from it (whose gradient still leaks: the where-trap), a ``tf.cond``/``if`` whose branch does
not run there, and an assertion that the operand is non-zero.  Each answer is a reason the
user reads, or None.  Static only: libcst, no TensorFlow.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from .. import ops
from .module import Scope
from .names import children as child_nodes
from .names import dotted_name


def names_in(node: cst.CSTNode) -> set[str]:
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Name):
            out.add(n.value)
        elif isinstance(n, cst.Attribute):
            out.add(dotted_name(n))
        stack.extend(child_nodes(n))
    return out


def _where_parts(call: cst.Call) -> tuple[cst.BaseExpression, list[cst.BaseExpression]] | None:
    args = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    cond = args.get("condition", positional[0] if positional else None)
    branches = [args.get("x"), args.get("y"), *positional[1:3]]
    if cond is None:
        return None
    return cond, [b for b in branches if b is not None]


def where_guard_reason(
    statement: cst.CSTNode, node: cst.CSTNode, scope: Scope | None = None
) -> str | None:
    """``tf.where(g > 0, w / g, 1.0)``: the division's inf/NaN value is never selected.

    The hazard sits in a branch of a ``where`` whose condition tests a name of the hazard's own
    denominator (or argument), or in its false branch when the condition (a flag the function
    computes, ``done = x0 == x1``) holds at the denominator's zero; only its gradient can leak,
    which is TNL302's finding."""
    hazard = node.right if isinstance(node, cst.BinaryOperation) else node
    if isinstance(node, cst.Call) and node.args:
        hazard = node.args[-1].value if len(node.args) > 1 else node.args[0].value
    wanted = names_in(hazard)
    zeros = _zero_pairs(node)
    stack: list[tuple[cst.CSTNode, str | None]] = [(statement, None)]
    while stack:
        current, reason = stack.pop()
        if current is node:
            return reason
        if isinstance(current, cst.Call) and dotted_name(current.func).endswith("where"):
            parts = _where_parts(current)
            if parts is not None:
                cond, branches = parts
                shared = sorted(wanted & names_in(cond))
                if shared:
                    for branch in branches:
                        stack.append((branch, f"the tf.where around it tests `{shared[0]}` first"))
                    stack.append((cond, reason))
                    continue
                if zeros and len(branches) == 2 and _covers_zero(cond, zeros, scope, 0):
                    why = (
                        f"the tf.where around it selects the other value when `{_code(cond)}` "
                        "holds, which it does at the zero of the denominator"
                    )
                    stack.extend([(branches[0], reason), (branches[1], why), (cond, reason)])
                    continue
        for child in child_nodes(current):
            stack.append((child, reason))
    return None


def _code(node: cst.CSTNode) -> str:
    """Source of an expression without its parentheses or spaces, to compare two of them."""
    if isinstance(node, cst.BaseExpression) and (node.lpar or node.rpar):
        node = node.with_changes(lpar=[], rpar=[])
    text = "".join(cst.Module([]).code_for_node(node).split())
    return "0" if text in ("0", "0.", "0.0") else text


def _zero_pairs(node: cst.CSTNode) -> set[frozenset[str]]:
    """Equalities that make the divisor zero: ``a - b`` is zero at ``a == b``, any other
    divisor ``d`` at ``d == 0``."""
    divisor: cst.BaseExpression | None = None
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        divisor = node.right
    elif isinstance(node, cst.Call) and len(node.args) == 2 and _is_division_call(node):
        divisor = node.args[1].value
    if divisor is None:
        return set()
    pairs = {frozenset({_code(divisor), "0"})}
    if isinstance(divisor, cst.BinaryOperation) and isinstance(divisor.operator, cst.Subtract):
        a, b = _code(divisor.left), _code(divisor.right)
        pairs |= {frozenset({a, b}), frozenset({f"{b}-{a}", "0"})}
    return pairs


def _is_division_call(call: cst.Call) -> bool:
    return dotted_name(call.func).rsplit(".", 1)[-1] in ("divide", "truediv", "realdiv", "div")


_OR_CALLS = frozenset({"logical_or", "reduce_any"})
_AND_CALLS = frozenset({"logical_and"})
_EQUAL_CALLS = frozenset({"equal"})
_LESS_CALLS = {n: o for n, o in ops.OPERATORS.items() if o in ("<", "<=")}  # less(d, tol)


def _covers_zero(
    cond: cst.BaseExpression, zeros: set[frozenset[str]], scope: Scope | None, depth: int
) -> bool:
    """``cond`` is true wherever the divisor is zero: an equality of the divisor's two sides,
    ``abs(d) < tol``, an ``or`` with such a part, or a flag the function assigns from one."""
    if depth > 4:
        return False
    if isinstance(cond, cst.Name):
        bindings = scope.bindings.get(cond.value) if scope is not None else None
        return bool(bindings) and all(
            b.value is not None
            and b.index is None
            and _covers_zero(b.value, zeros, scope, depth + 1)
            for b in bindings or ()
        )
    if isinstance(cond, cst.BinaryOperation) and isinstance(cond.operator, (cst.BitOr, cst.BitAnd)):
        parts = [_covers_zero(p, zeros, scope, depth + 1) for p in (cond.left, cond.right)]
        return any(parts) if isinstance(cond.operator, cst.BitOr) else all(parts)
    if isinstance(cond, cst.BooleanOperation):
        parts = [_covers_zero(p, zeros, scope, depth + 1) for p in (cond.left, cond.right)]
        return any(parts) if isinstance(cond.operator, cst.Or) else all(parts)
    if isinstance(cond, cst.Comparison) and len(cond.comparisons) == 1:
        op = cond.comparisons[0].operator
        right = cond.comparisons[0].comparator
        if isinstance(op, cst.Equal):
            return frozenset({_code(cond.left), _code(right)}) in zeros
        if isinstance(op, (cst.LessThan, cst.LessThanEqual)):
            return _small_abs(cond.left, right, isinstance(op, cst.LessThan), zeros)
        return False
    if isinstance(cond, cst.Call):
        last = dotted_name(cond.func).rsplit(".", 1)[-1]
        args = [a.value for a in cond.args if a.keyword is None and not a.star]
        if last in _OR_CALLS | _AND_CALLS and args:
            parts = [_covers_zero(p, zeros, scope, depth + 1) for p in args]
            return any(parts) if last in _OR_CALLS else all(parts)
        if last in _EQUAL_CALLS and len(args) == 2:
            return frozenset({_code(args[0]), _code(args[1])}) in zeros
        if last in _LESS_CALLS and len(args) == 2:
            return _small_abs(args[0], args[1], last == "less", zeros)
    return False


def _small_abs(
    left: cst.BaseExpression, bound: cst.BaseExpression, strict: bool, zeros: set[frozenset[str]]
) -> bool:
    """``abs(d) < tol`` (``tol`` not a literal 0 when strict) holds at ``d == 0``."""
    if not (isinstance(left, cst.Call) and dotted_name(left.func).rsplit(".", 1)[-1] == "abs"):
        return False
    if not left.args or (strict and _code(bound) == "0"):
        return False
    return frozenset({_code(left.args[0].value), "0"}) in zeros


def _hazard_names(node: cst.CSTNode) -> set[str]:
    """Names in the operand that makes the hazard: a denominator, a reciprocal's argument."""
    hazard = node.right if isinstance(node, cst.BinaryOperation) else node
    if isinstance(node, cst.Call) and node.args:
        hazard = node.args[-1].value if len(node.args) > 1 else node.args[0].value
    return names_in(hazard)


def _cond_parts(call: cst.Call) -> tuple[cst.BaseExpression, list[cst.BaseExpression]] | None:
    """``tf.cond(pred, true_fn, false_fn)`` (any module, keywords too) -> (pred, branches)."""
    if not dotted_name(call.func).endswith("cond"):
        return None
    args = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    pred = args.get("pred", positional[0] if positional else None)
    branches = [args.get("true_fn"), args.get("false_fn"), *positional[1:3]]
    return (pred, [b for b in branches if b is not None]) if pred is not None else None


def cond_guard_reason(scope: Scope, statement: cst.CSTNode, node: cst.CSTNode) -> str | None:
    """The hazard runs only under a ``tf.cond``/``if`` whose predicate tests its own operand:
    ``tf.cond(hi > lo, lambda: scale(255 / (hi - lo)), ...)``, ``if n > 0: x / n``."""
    wanted = _hazard_names(node)
    if not wanted:
        return None
    fn = scope.node if scope.kind == "function" else None
    outer = scope.parent
    while outer is not None and outer.kind != "function":
        outer = outer.parent
    inner = fn.body if isinstance(fn, cst.FunctionDef) else statement  # `if` above the statement
    roots: list[tuple[cst.CSTNode, cst.CSTNode]] = [(inner, node)]
    if isinstance(fn, cst.FunctionDef) and outer is not None:
        roots.append((outer.node, fn))  # a nested helper: where is it called?
    for root, target in roots:
        helper = fn if target is fn and isinstance(fn, cst.FunctionDef) else None
        reason = _guarded_in(root, target, wanted, helper)
        if reason:
            return reason
    return assertion_guard_reason(fn, node) if isinstance(fn, cst.FunctionDef) else None


# Assertions that raise when their first argument is zero: name -> the bound's test (None: no
# second argument), true when the asserted relation to that bound excludes 0.
_NONZERO_ASSERTS: dict[str, Any] = {
    "assert_positive": None,
    "assert_negative": None,
    "assert_greater": lambda bound: bound >= 0,
    "assert_less": lambda bound: bound <= 0,
    "assert_none_equal": lambda bound: bound == 0,
}
# Functions whose result is zero only where their argument is.
_ZERO_PRESERVING = ops.ZERO_PRESERVING | {"convert_to_tensor"}  # + a name not registered


def assertion_guard_reason(fn: cst.FunctionDef, node: cst.CSTNode) -> str | None:
    """``assert_positive(t)`` and ``assert_positive(u)`` in the function (directly or in
    ``tf.control_dependencies``) before ``s / sqrt(t * u)``: the zero a witness would need makes
    the code raise, so the hazard never produces a value.  Assertions under an ``if`` (``if
    validate_args:``) may be off and do not count."""
    operand = _hazard_operand(node)
    if operand is None:
        return None
    asserted = _asserted_nonzero(fn.body)
    if asserted and _nonzero(operand, asserted):
        names = "`, `".join(sorted(asserted & names_in(operand)))
        return f"an assertion of the code rejects the zero of `{names}` (it raises instead)"
    return None


def _hazard_operand(node: cst.CSTNode) -> cst.BaseExpression | None:
    if isinstance(node, cst.BinaryOperation):
        return node.right
    if isinstance(node, cst.Call) and node.args:
        return node.args[-1].value if len(node.args) > 1 else node.args[0].value
    return None


def _asserted_nonzero(body: cst.CSTNode) -> set[str]:
    """Names whose zero an unconditional assertion in ``body`` rejects (nested functions and
    ``if`` bodies excluded)."""
    out: set[str] = set()
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.If)):
            continue
        if isinstance(node, cst.Call):
            name = _asserted_name(node)
            if name:
                out.add(name)
        stack.extend(child_nodes(node))
    return out


def _asserted_name(call: cst.Call) -> str | None:
    test = _NONZERO_ASSERTS.get(dotted_name(call.func).rsplit(".", 1)[-1], False)
    args = [a.value for a in call.args if a.keyword is None and not a.star]
    if test is False or not args or not isinstance(args[0], (cst.Name, cst.Attribute)):
        return None
    if test is not None:
        bound = _number(args[1]) if len(args) > 1 else None
        if bound is None or not test(bound):
            return None
    return _code(args[0])


def _number(node: cst.BaseExpression) -> float | None:
    sign = 1.0
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        sign, node = -1.0, node.expression
    if isinstance(node, (cst.Integer, cst.Float)):
        return sign * float(node.evaluated_value)
    return None


def _nonzero(expr: cst.BaseExpression, asserted: set[str]) -> bool:
    """``expr`` cannot be zero once every asserted name is non-zero: a product of such names,
    through sqrt/abs/square/casts and non-zero literals."""
    if isinstance(expr, (cst.Name, cst.Attribute)):
        return _code(expr) in asserted
    number = _number(expr)
    if number is not None:
        return number != 0
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        return _nonzero(expr.left, asserted) and _nonzero(expr.right, asserted)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Power):
        return _nonzero(expr.left, asserted)
    if isinstance(expr, cst.Call) and expr.args:
        last = dotted_name(expr.func).rsplit(".", 1)[-1]
        return last in _ZERO_PRESERVING and _nonzero(expr.args[0].value, asserted)
    return False


def _guarded_in(
    root: cst.CSTNode, target: cst.CSTNode, wanted: set[str], helper: cst.FunctionDef | None
) -> str | None:
    """Every use of ``target`` under ``root`` (or every call of ``helper``) sits in a branch
    whose predicate shares a name with ``wanted``."""
    found: list[str | None] = []
    stack: list[tuple[cst.CSTNode, str | None]] = [(root, None)]
    while stack:
        current, reason = stack.pop()
        if helper is None and current is target:
            found.append(reason)
            continue
        if helper is not None and current is helper:
            continue  # the definition itself is not a use
        if (
            helper is not None
            and isinstance(current, cst.Call)
            and isinstance(current.func, cst.Name)
            and current.func.value == helper.name.value
        ):
            found.append(reason)
        if isinstance(current, cst.Call):
            parts = _cond_parts(current)
            if parts is not None:
                pred, branches = parts
                shared = sorted(wanted & names_in(pred))
                if shared:
                    for branch in branches:
                        stack.append((branch, f"the tf.cond around it tests `{shared[0]}` first"))
                    stack.append((pred, reason))
                    continue
        if isinstance(current, cst.If):
            shared = sorted(wanted & names_in(current.test))
            if shared:
                stack.append((current.body, f"the `if` around it tests `{shared[0]}` first"))
                if current.orelse is not None:
                    stack.append((current.orelse, reason))
                stack.append((current.test, reason))
                continue
        for child in child_nodes(current):
            stack.append((child, reason))
    if found and all(found):
        return found[0]
    return None
