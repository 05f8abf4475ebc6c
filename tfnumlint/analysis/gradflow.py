"""Where a gradient can flow: one decision for every rule and every verdict.

A NaN, inf, exploding or dead *gradient* only matters where something is differentiated.  A
*value* symptom (a NaN or inf in the forward result) matters wherever the code runs, so only
the gradient-only symptoms are gated, and only by code facts: a framework hook that is never
differentiated (an optimizer update, a metric update), ``tf.stop_gradient`` and other calls
that pass no gradient, a value that only feeds an integer or boolean result, a dead store, and
reachability (``roots.py``): no path from the hazard to a differentiation root refutes; a
function with no caller in the project is not gated (its callers are not in view, so the
finding keeps its status); one mapped over a dataset makes the symptom conditional.  Names of user functions, variables and files never decide.  The verdict side
(:func:`apply`) applies that decision with a reason the user reads.  Plain data only: no
TensorFlow import.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import libcst as cst

from .. import ops
from .module import Scope, call_arg
from .names import dotted_name
from .roots import Path as ReachPath
from .roots import reach

GRADIENT_ONLY = frozenset({"nan-gradient", "inf-gradient", "exploding-gradient", "dead-gradient"})
VALUE_ONLY = frozenset({"nan-value", "inf-value"})

# Methods the framework calls to apply updates or maintain metrics (TF/Keras hook names, API):
# nothing is differentiated there.
_UPDATE_METHODS = frozenset(
    {"_resource_apply_dense", "_resource_apply_sparse", "_resource_apply_sparse_duplicate_indices",
     "_apply_dense", "_apply_sparse", "apply_gradients", "update_step", "_update_step",
     "_update_step_xla", "_distributed_apply", "_finish", "_prepare_local", "_create_slots",
     "build"}
)  # fmt: skip
_METRIC_METHODS = frozenset(
    {"update_state", "result", "reset_state", "reset_states", "merge_state"}
)
# Keras base classes (the last part of the base as written, or its API module) whose methods
# are update steps, metric updates, initializers or schedules.
_BASE_CONTEXT = (
    (frozenset({"Optimizer", "OptimizerV2"}), ".optimizers.", "an optimizer update step"),
    (frozenset({"Metric", "Mean", "Sum", "MeanMetricWrapper"}), ".metrics.", "a metric update"),
    (frozenset({"Initializer"}), ".initializers.", "an initializer"),
    (frozenset({"LearningRateSchedule"}), ".schedules.", "a learning-rate schedule"),
)
# Calls whose arguments are never differentiated.
_NO_GRAD_CALL = re.compile(
    r"(?:^|\.)(?:stop_gradient|assert\w*|check_numerics|scalar|histogram|print|Print|"
    r"numpy_function|py_function)$"
)
_NO_GRAD_CALL_REASON = {
    "stop_gradient": "the value is under tf.stop_gradient",
    "check_numerics": "the value only feeds a runtime check",
    "scalar": "the value only feeds a summary",
    "histogram": "the value only feeds a summary",
    "print": "the value is only printed",
    "Print": "the value is only printed",
    "numpy_function": "the value goes through numpy_function (no gradient)",
    "py_function": "the value goes through py_function",
}


def _function_scopes(scope: Scope) -> list[Scope]:
    out = []
    s: Scope | None = scope
    while s is not None:
        if s.kind == "function" and isinstance(s.node, cst.FunctionDef):
            out.append(s)
        s = s.parent
    return out


def _is_custom_gradient(node: cst.BaseExpression) -> bool:
    """``tf.custom_gradient``, ``tfp_custom_gradient.custom_gradient``, ``custom_gradient``."""
    return dotted_name(node).rsplit(".", 1)[-1] == "custom_gradient"


def _decorated_custom_gradient(fn: cst.FunctionDef) -> bool:
    return any(
        _is_custom_gradient(d.decorator)
        or (isinstance(d.decorator, cst.Call) and _is_custom_gradient(d.decorator.func))
        for d in fn.decorators
    )


# Keywords of `custom_gradient(vjp_fwd=, vjp_bwd=, jvp_fn=)` (TFP) that name the gradient rule;
# any other function argument (TFP's `vjp_fwd`, tf.custom_gradient's `f`) is the forward.
_GRADIENT_RULE_KEYWORDS = frozenset({"vjp_bwd", "jvp_fn", "bwd", "grad_fn"})


# Explicit differentiation: `tfp.math.value_and_gradient`, `tf.gradients`, `tape.gradient`...
_DIFFERENTIATE = re.compile(
    r"(?:^|\.)(?:value_and_gradient|gradients?|jacobian|batch_jacobian|hessians|grad|"
    r"value_and_grad|jvp|vjp)$"
)


class _Walk:
    """One walk of a module: every function node with the function nodes around it, the
    ``custom_gradient`` calls, and where each module function is referenced."""

    def __init__(self, module: cst.Module) -> None:
        self.defs: dict[str, list[cst.FunctionDef]] = {}
        self.enclosing: dict[int, tuple[cst.CSTNode, ...]] = {}  # id(def/lambda) -> outer fns
        self.cg_calls: list[cst.Call] = []
        # name -> enclosing function nodes of each reference that is not its own `def`
        self.refs: dict[str, list[tuple[cst.CSTNode, ...]]] = {}
        # names referenced inside an explicit differentiation (`value_and_gradient(lambda z:
        # f(z), x)`): their first derivative is taken even inside a gradient rule
        self.differentiated: set[str] = set()
        self.loop_calls: list[cst.Call] = []  # `tf.while_loop(cond, body, loop_vars)` calls
        self.map_calls: list[cst.Call] = []  # `dataset.map(fn)`: input pipeline functions
        # `tf.map_fn(fn, x)`, `tf.vectorized_map(fn, x)`: fn sees one element at a time
        self.element_calls: list[cst.Call] = []
        stack: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...], bool]] = [(module, (), False)]
        while stack:
            node, outer, diff = stack.pop()
            inner = outer
            if isinstance(node, (cst.FunctionDef, cst.Lambda)):
                self.enclosing[id(node)] = outer
                inner = (*outer, node)
                if isinstance(node, cst.FunctionDef):
                    self.defs.setdefault(node.name.value, []).append(node)
                    for d in node.decorators:  # decorators are evaluated outside the function
                        stack.append((d, outer, diff))
                    for child in (node.params, node.body):
                        stack.append((child, inner, diff))
                    continue
            elif isinstance(node, cst.Call) and _is_custom_gradient(node.func):
                self.cg_calls.append(node)
            elif isinstance(node, cst.Call) and dotted_name(node.func).endswith("while_loop"):
                self.loop_calls.append(node)
            elif isinstance(node, cst.Call) and _is_dataset_map(node):
                self.map_calls.append(node)
            elif isinstance(node, cst.Call) and _ELEMENT_MAPS.search(dotted_name(node.func)):
                self.element_calls.append(node)
            elif isinstance(node, cst.Call) and _DIFFERENTIATE.search(dotted_name(node.func)):
                diff = True
            elif isinstance(node, cst.Name):
                self.refs.setdefault(node.value, []).append(outer)
                if diff:
                    self.differentiated.add(node.value)
            stack.extend((child, inner, diff) for child in node.children)


def _custom_gradient_regions(module: cst.Module) -> dict[int, str]:
    """id(function or lambda node) -> why its autodiff gradient is never taken.

    The decorated function and the forward passed to ``custom_gradient`` have their gradient
    replaced; the gradient rules (``vjp_bwd``, ``jvp_fn``) are themselves derivatives, whose own
    gradient is a second derivative nobody takes; a private module function referenced only
    from such code inherits it (to a fixed point)."""
    walk = _Walk(module)
    regions: dict[int, str] = {}
    for defs in walk.defs.values():
        for fn in defs:
            if _decorated_custom_gradient(fn):
                regions[id(fn)] = f"`{fn.name.value}` defines its own gradient (custom_gradient)"
    for call in walk.cg_calls:
        for arg in call.args:
            rule = arg.keyword is not None and arg.keyword.value in _GRADIENT_RULE_KEYWORDS
            found = _callable_targets(walk, arg.value)
            if found is None:
                continue
            targets, label = found
            why = (
                f"{label} is the gradient rule of a custom_gradient (its own gradient is a "
                "second derivative nobody takes)"
                if rule
                else f"{label} is the forward of a custom_gradient (its gradient is replaced)"
            )
            for target in targets:
                regions.setdefault(id(target), why)
    _inherit(
        walk,
        regions,
        "`{name}` is only called from custom-gradient code (`{caller}`), whose autodiff "
        "gradient is never taken",
    )
    return regions


def _inherit(walk: _Walk, regions: dict[int, str], why: str) -> None:
    """A private module function referenced only from functions in ``regions`` joins them
    (to a fixed point), unless something differentiates it explicitly."""
    changed = True
    while changed:
        changed = False
        for name, defs in walk.defs.items():
            if not name.startswith("_") or any(id(fn) in regions for fn in defs):
                continue
            if name in walk.differentiated:
                continue  # a gradient rule differentiates it explicitly
            uses = walk.refs.get(name, [])
            if not uses or not all(any(id(f) in regions for f in outer) for outer in uses):
                continue
            caller = next(f for f in uses[0] if id(f) in regions)
            caller_name = caller.name.value if isinstance(caller, cst.FunctionDef) else "a lambda"
            for fn in defs:
                regions[id(fn)] = why.format(name=name, caller=caller_name)
            changed = True


# root scope of a module -> its custom-gradient regions (computed once, for modules with findings)
_REGIONS: weakref.WeakKeyDictionary[Scope, dict[int, str]] = weakref.WeakKeyDictionary()


def custom_gradient_reason(scope: Scope) -> str | None:
    """Why ``scope`` (or a function around it) is custom-gradient code, or None."""
    root = _root(scope)
    module = root.node
    if not isinstance(module, cst.Module):
        return None
    regions = _REGIONS.get(root)
    if regions is None:
        regions = _REGIONS[root] = _custom_gradient_regions(module)
    if not regions:
        return None
    found = _enclosing_region(scope, regions)
    return found[1] if found else None


def _callable_targets(walk, value: cst.BaseExpression) -> tuple[list[cst.CSTNode], str] | None:
    """The code a callable argument runs (a lambda, or the module's defs of a name) and how a
    message names it; None for anything else (an attribute, a call)."""
    if isinstance(value, cst.Lambda):
        return [value], "a lambda"
    if isinstance(value, cst.Name):
        return list(walk.defs.get(value.value, ())), f"`{value.value}`"
    return None


def _base_context(text: str) -> str | None:
    for names, module, what in _BASE_CONTEXT:
        if text and (text.rsplit(".", 1)[-1] in names or module in f".{text}"):
            return what
    return None


def context_of_scope(scope: Scope, path: str = "") -> str | None:
    """Why nothing in ``scope`` is differentiated, from the framework hook it implements; None
    if it may be.  Only API facts count: the method overrides an optimizer or metric hook of
    a class with a base, or the class derives from a Keras optimizer, metric, initializer or
    schedule.  ``path`` is accepted for callers and never read (paths never decide)."""
    for fs in _function_scopes(scope):
        name = fs.name
        if fs.cls is None:
            continue
        bases = [b for b in fs.cls.bases if b] + [
            dotted_name(b.value) for b in fs.cls.node.bases if dotted_name(b.value)
        ]
        if not bases:
            continue
        if name in _UPDATE_METHODS and name != "build":
            return f"it is in the optimizer/variable update `{name}`"
        if name in _METRIC_METHODS:
            return f"it is in the metric method `{name}`"
        for base in bases:
            what = _base_context(base)
            if what:
                return f"it is in {what} (`{fs.cls.node.name.value}.{name}`)"
    return custom_gradient_reason(scope)


def enclosing_call_reason(statement: cst.CSTNode, node: cst.CSTNode) -> str | None:
    """The node sits inside the arguments of a call that blocks or never takes gradients."""
    stack: list[tuple[cst.CSTNode, str | None]] = [(statement, None)]
    while stack:
        current, reason = stack.pop()
        if current is node:
            return reason
        if isinstance(current, cst.Call):
            name = dotted_name(current.func)
            last = name.rsplit(".", 1)[-1]
            if _NO_GRAD_CALL.search(name) and (last != "scalar" or "summary" in name):
                if last.startswith("assert"):
                    reason = f"the value only feeds the assertion `{name}`"
                else:
                    reason = _NO_GRAD_CALL_REASON.get(last, f"the value only feeds `{name}`")
            elif last in _STEP_FUNCTIONS or _integer_cast(current, last):
                reason = (
                    f"the value only feeds `{name or last}`, whose result is an integer or a "
                    "boolean: no gradient flows back through it"
                )
        elif isinstance(current, cst.Comparison):
            reason = reason or "the value only feeds a comparison, which has no gradient"
        elif isinstance(current, cst.BinaryOperation) and isinstance(
            current.operator, cst.FloorDivide
        ):
            reason = reason or "the value only feeds a floor division `//`, which has no gradient"
        for child in current.children:
            stack.append((child, reason))
    return None


# Ops whose gradient is None or zero: their result is an integer, a boolean or piecewise constant.
# (registered ones: ops.STEP_FUNCTIONS; the rest are names the registry does not hold)
_STEP_FUNCTIONS = ops.STEP_FUNCTIONS | {
    "rint", "floordiv", "floor_div", "argmax", "argmin", "is_nan", "is_inf", "is_finite", "int"
}  # fmt: skip
_INTEGER_DTYPE = re.compile(r"^(?:u?int(?:8|16|32|64)|bool)$")


def _integer_cast(call: cst.Call, last: str) -> bool:
    """``tf.cast(x, tf.int32)``, ``tf.cast(x, dtype="int64")``: a cast to an integer dtype."""
    if last not in ("cast", "saturate_cast"):
        return False
    args = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    dtype = args.get("dtype", positional[1] if len(positional) > 1 else None)
    if dtype is None:
        return False
    text = (_string(dtype) if isinstance(dtype, cst.SimpleString) else dotted_name(dtype)) or ""
    return bool(_INTEGER_DTYPE.match(text.rsplit(".", 1)[-1]))


def probe_reason(probe: dict[str, Any] | None) -> str | None:
    """Every free input of the slice is a random draw (its producer is a random op)."""
    if not probe or probe.get("kind") != "expr":
        return None
    inputs = probe.get("inputs") or []
    if inputs and all(spec.get("producer") == "random" for spec in inputs):
        return "its inputs are random draws (a sampler)"
    return None


def _cast_inputs(tree: Any) -> set[str]:
    """Names of inputs that enter the tree only through a cast."""
    inside: set[str] = set()
    outside: set[str] = set()

    def walk(node: Any, under_cast: bool) -> None:
        if isinstance(node, dict):
            if node.get("k") == "input":
                (inside if under_cast else outside).add(str(node.get("name")))
                return
            cast = node.get("k") == "call" and node.get("op") == "cast"
            for value in node.values():
                walk(value, under_cast or cast)
        elif isinstance(node, list):
            for value in node:
                walk(value, under_cast)

    walk(tree, False)
    return inside - outside


def _names(node: cst.CSTNode) -> set[str]:
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Name):
            out.add(n.value)
        elif isinstance(n, cst.Attribute):
            out.add(dotted_name(n))
        stack.extend(n.children)
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
    wanted = _names(hazard)
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
                shared = sorted(wanted & _names(cond))
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
        for child in current.children:
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
_LESS_CALLS = {"less": "<", "less_equal": "<="}


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
    return _names(hazard)


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
        names = "`, `".join(sorted(asserted & _names(operand)))
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
        stack.extend(node.children)
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
                shared = sorted(wanted & _names(pred))
                if shared:
                    for branch in branches:
                        stack.append((branch, f"the tf.cond around it tests `{shared[0]}` first"))
                    stack.append((pred, reason))
                    continue
        if isinstance(current, cst.If):
            shared = sorted(wanted & _names(current.test))
            if shared:
                stack.append((current.body, f"the `if` around it tests `{shared[0]}` first"))
                if current.orelse is not None:
                    stack.append((current.orelse, reason))
                stack.append((current.test, reason))
                continue
        for child in current.children:
            stack.append((child, reason))
    if found and all(found):
        return found[0]
    return None


@dataclass(frozen=True)
class NoGradient:
    """Why no gradient flows at a finding.

    ``certain``: the code itself rules a gradient out (an optimizer step, ``stop_gradient``, a
    value rounded to an integer), so a gradient-only confirmation is refuted.  Otherwise the
    context is read from where the code sits (evaluation code, an input pipeline, a sampling
    helper, callers passing returns): a project may still differentiate it, so the
    confirmation only becomes inconclusive."""

    reason: str
    certain: bool = True


def no_gradient(
    scope: Scope,
    statement: cst.CSTNode,
    node: cst.CSTNode,
    path: str,
    probe: dict | None,
    imported: Callable[[str], bool] | None = None,
) -> NoGradient | None:
    """The one decision of where gradients flow: why none does at this finding, or None.

    Code facts refute (a framework hook, stop_gradient, an integer result, no path to a
    differentiation root); a function mapped over a dataset makes the gradient symptom
    conditional (inconclusive).  A function with no caller in the project is not gated: a
    library's loss has its callers elsewhere, so absence of a caller is no evidence."""
    certain = (
        context_of_scope(scope, path)
        or enclosing_call_reason(statement, node)
        or gradient_free_uses_reason(scope, statement)
        or probe_reason(probe)
    )
    if certain:
        return NoGradient(certain)
    found = reach(scope, statement, imported or _nothing_imported)
    if found.path is ReachPath.UNREACHED:
        return NoGradient(found.fact)
    if found.path is ReachPath.REACHED:
        return None
    likely = dataset_map_reason(scope)
    return NoGradient(likely, certain=False) if likely else None


def _nothing_imported(name: str) -> bool:
    return False


def no_gradient_reason(
    scope: Scope, statement: cst.CSTNode, node: cst.CSTNode, path: str, probe: dict | None
) -> str | None:
    """Why no gradient flows at this finding, or None when one may."""
    found = no_gradient(scope, statement, node, path, probe)
    return found.reason if found else None


_MAP_METHODS = frozenset({"map", "flat_map", "interleave", "filter"})


def _is_dataset_map(call: cst.Call) -> bool:
    """``dataset.map(fn)`` (any receiver, not a module function such as ``tf.map_fn``)."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in _MAP_METHODS):
        return False
    receiver = dotted_name(func.value)
    return receiver.split(".", 1)[0] not in ("tf", "np", "numpy", "jnp", "jax", "keras")


def _dataset_map_regions(module: cst.Module) -> dict[int, str]:
    walk = _Walk(module)
    regions: dict[int, str] = {}
    for call in walk.map_calls:
        args = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        value = args.get("map_func", args.get("predicate", positional[0] if positional else None))
        found = _callable_targets(walk, value) if value is not None else None
        if found is None:
            continue
        targets, label = found
        for target in targets:
            regions.setdefault(
                id(target),
                f"{label} is mapped over a dataset (`.{_attr(call)}`): no gradient flows "
                "through the input pipeline",
            )
    if regions:
        _inherit(
            walk,
            regions,
            "`{name}` is only called from a dataset map function (`{caller}`): no gradient "
            "flows through the input pipeline",
        )
    return regions


def _attr(call: cst.Call) -> str:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else ""


_MAPPED: weakref.WeakKeyDictionary[Scope, dict[int, str]] = weakref.WeakKeyDictionary()


_ELEMENT_MAPS = re.compile(r"(?:^|\.)(?:map_fn|vectorized_map)$")
_ELEMENTS: weakref.WeakKeyDictionary[Scope, dict[int, str]] = weakref.WeakKeyDictionary()


def element_map_reason(scope: Scope) -> str | None:
    """``scope`` (or a function around it) is mapped over the elements of a tensor
    (``tf.map_fn(fn, x)``, ``tf.vectorized_map``): it sees one element at a time."""
    root = _root(scope)
    if not isinstance(root.node, cst.Module):
        return None
    regions = _ELEMENTS.get(root)
    if regions is None:
        walk = _Walk(root.node)
        regions = {}
        for call in walk.element_calls:
            fn = call_arg(call, 0, "fn")
            targets = _callable_targets(walk, fn) if fn is not None else None
            if targets is None:
                continue
            why = f"{targets[1]} is mapped over elements (`{dotted_name(call.func)}`)"
            for target in targets[0]:
                regions.setdefault(id(target), why)
        _ELEMENTS[root] = regions
    found = _enclosing_region(scope, regions)
    return found[1] if found else None


def dataset_map_reason(scope: Scope) -> str | None:
    """``scope`` (or a function around it) is mapped over a ``tf.data`` dataset."""
    root = _root(scope)
    if not isinstance(root.node, cst.Module):
        return None
    regions = _MAPPED.get(root)
    if regions is None:
        regions = _MAPPED[root] = _dataset_map_regions(root.node)
    found = _enclosing_region(scope, regions)
    return found[1] if found else None


def _enclosing_region(scope: Scope, regions: dict[int, str]) -> tuple[Scope, str] | None:
    """The innermost function around ``scope`` (itself included) that is one of a module's
    ``regions`` (function node id -> why), with its reason."""
    s: Scope | None = scope
    while s is not None:
        if s.kind == "function" and id(s.node) in regions:
            return s, regions[id(s.node)]
        s = s.parent
    return None


def _root(scope: Scope) -> Scope:
    while scope.parent is not None:
        scope = scope.parent
    return scope


def _assigned_name(scope: Scope, statement: cst.CSTNode) -> tuple[str, cst.FunctionDef] | None:
    """``name = ...`` in a function body: the name and the function, else None."""
    if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1):
        return None
    target = statement.targets[0].target
    fn = scope.node if scope.kind == "function" else None
    if not (isinstance(target, cst.Name) and isinstance(fn, cst.FunctionDef)):
        return None
    return target.value, fn


def overwritten_reason(scope: Scope, statement: cst.CSTNode) -> str | None:
    """``p = a / norm(a)`` followed, in the same block and before any read of ``p``, by another
    plain ``p = ...``: the flagged value is never used, so neither its value nor its gradient
    reaches anything.  A read inside a nested block, or any other statement that names ``p``
    (an augmented assignment, a loop), counts as a use."""
    if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1):
        return None
    target = statement.targets[0].target
    fn = scope.node if scope.kind == "function" else None
    if not (isinstance(target, cst.Name) and isinstance(fn, cst.FunctionDef)):
        return None
    if _has_side_effect(statement.value):
        return None  # `v = var.assign(a / b)`: the update happens whatever `v` becomes
    following = statements_after(fn.body, statement)
    if following is None:
        return None
    for line in following:
        if not isinstance(line, cst.SimpleStatementLine):
            if target.value in _names(line):
                return None  # read, or rebound only on some paths
            continue
        for small in line.body:
            if (
                isinstance(small, cst.Assign)
                and _assigns_only(small, target.value)
                and target.value not in _names(small.value)
            ):
                return f"`{target.value}` is assigned again before any use: its value is never read"
            if target.value in _names(small):
                return None
    return None


_EFFECT_CALL = re.compile(
    r"^(?:assign\w*|scatter\w*|apply\w*|update\w*|add_(?:loss|metric|update)\w*|print|write|scalar|histogram)$"
)


def _has_side_effect(value: cst.CSTNode) -> bool:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call) and _EFFECT_CALL.match(
            dotted_name(node.func).rsplit(".", 1)[-1]
        ):
            return True
        stack.extend(node.children)
    return False


def gradient_free_uses_reason(scope: Scope, statement: cst.CSTNode) -> str | None:
    """``v = tf.norm(...)`` whose every later read (up to a reassignment in the same block)
    only feeds a comparison, an integer cast, ``argmax``, ``round``, ``stop_gradient`` or a
    summary: a leader score compared with ``>=``.  No gradient flows back into ``v``."""
    assigned = _assigned_name(scope, statement)
    if assigned is None:
        return None
    name, fn = assigned
    following = statements_after(fn.body, statement)
    if not following:
        return None
    why: list[str] = []
    for line in following:
        for read in reads_of(line, name):
            reason = enclosing_call_reason(line, read)
            if reason is None:
                return None
            why.append(reason)
        if isinstance(line, cst.SimpleStatementLine) and any(
            isinstance(small, cst.Assign) and _assigns_only(small, name) for small in line.body
        ):
            break  # rebound: later reads see another value
    if not why:
        return None
    return f"every use of `{name}` is gradient-free ({why[0]})"


def reads_of(node: cst.CSTNode, name: str) -> list[cst.Name]:
    """Every ``Name`` node reading ``name`` under ``node`` (assignment targets excluded)."""
    out: list[cst.Name] = []
    stack: list[tuple[cst.CSTNode, bool]] = [(node, False)]
    while stack:
        current, is_target = stack.pop()
        if isinstance(current, cst.Name) and current.value == name and not is_target:
            out.append(current)
        if isinstance(current, cst.AssignTarget):
            stack.append((current.target, True))
            continue
        stack.extend((child, is_target) for child in current.children)
    return out


def _assigns_only(assign: cst.Assign, name: str) -> bool:
    """``name = ...`` with a single plain name target."""
    targets = assign.targets
    return (
        len(targets) == 1
        and isinstance(targets[0].target, cst.Name)
        and (targets[0].target.value == name)
    )


def statements_after(body: cst.CSTNode, statement: cst.CSTNode) -> list[cst.BaseStatement] | None:
    """The statements after the line holding ``statement`` in its own block (None if the line
    holds more than the statement, or is not found)."""
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) and node is not body:
            continue
        lines = getattr(node, "body", None)
        if isinstance(lines, (list, tuple)):
            for i, line in enumerate(lines):
                if isinstance(line, cst.SimpleStatementLine) and any(
                    small is statement for small in line.body
                ):
                    return list(lines[i + 1 :]) if len(line.body) == 1 else None
        stack.extend(node.children)
    return None


def _string(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value if isinstance(node.evaluated_value, str) else None
    return None


def _uses_in(
    body: cst.CSTNode, name: str, skip: cst.CSTNode
) -> list[tuple[cst.CSTNode, cst.CSTNode]]:
    """(dict or other container, direct parent) of every read of ``name`` in ``body``."""
    out: list[tuple[cst.CSTNode, cst.CSTNode]] = []
    stack: list[tuple[cst.CSTNode, cst.CSTNode | None, cst.CSTNode | None]] = [(body, None, None)]
    while stack:
        node, parent, grand = stack.pop()
        if node is skip:
            continue
        if isinstance(node, cst.Name) and node.value == name and parent is not None:
            if isinstance(parent, cst.AssignTarget):
                continue
            out.append((grand if grand is not None else parent, parent))
            continue
        stack.extend((child, node, parent) for child in node.children)
    return out


_SOFTMAX_FAMILY = frozenset({"softmax", "log_softmax"})


def _has_op(tree: Any, ops: frozenset[str]) -> bool:
    if isinstance(tree, dict):
        if tree.get("k") == "call" and tree.get("op") in ops:
            return True
        return any(_has_op(v, ops) for v in tree.values())
    if isinstance(tree, list):
        return any(_has_op(v, ops) for v in tree)
    return False


def zero_by_construction(probe: dict[str, Any], out: dict[str, Any]) -> bool:
    """A dead gradient of softmax outputs summed without a label: sum_i log softmax_i(z) has
    gradient 1 - K * softmax(z), 0 at the uniform point by construction, not by saturation."""
    return (
        out.get("symptom") == "dead-gradient"
        and not probe.get("loss")
        and _has_op(probe.get("target"), _SOFTMAX_FAMILY)
    )


def _bad(v: Any) -> bool:
    return isinstance(v, str) or (isinstance(v, (int, float)) and abs(v) >= 1e6)


def labels_only_reason(out: dict[str, Any], probe: dict[str, Any] | None = None) -> str | None:
    """The bad gradient is only with respect to data inputs (placeholders, dataset elements,
    model inputs: their producer says so), which nothing trains."""
    grads = (out.get("observed") or {}).get("gradient") or {}
    bad = [name for name, v in grads.items() if _bad(v)]
    origins = {str(s.get("name")): s.get("origin") for s in (probe or {}).get("inputs") or []}
    if bad and all(origins.get(name) == "data" for name in bad):
        return f"the bad gradient is only with respect to `{bad[0]}`, a data input"
    return None


def statement_value_symptom(out: dict[str, Any]) -> str | None:
    """The enclosing statement's non-finite value at a gradient-only witness (``(x - mean) /
    sqrt(var)`` is 0/0 where ``sqrt(var)`` has its inf gradient): the forward value is broken
    too, which matters wherever the code runs, differentiated or not."""
    value = (out.get("observed") or {}).get("loss")
    return value if value in ("nan", "inf", "-inf") else None


def apply(probe: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """The verdict: a gradient-only symptom where no gradient flows is not confirmed, nor is a
    value the code never computes (a guard)."""
    if out.get("status") == "confirmed" and zero_by_construction(probe, out):
        return {
            **out,
            "status": "inconclusive",
            "detail": (
                "the only zero gradient found is that of the plain sum of softmax outputs, which "
                "is 0 by construction (no loss weights them here): no evidence of saturation"
            ),
        }
    unused = probe.get("unused")
    if unused and out.get("status") == "confirmed":
        return {
            **out,
            "status": "refuted",
            "detail": f"{out.get('detail', '')}; but nothing reads that value: {unused}",
        }
    branch = probe.get("guarded")
    if branch and out.get("status") == "confirmed":
        return {
            **out,
            "status": "refuted",
            "detail": f"{out.get('detail', '')}; but that branch never runs there: {branch}",
        }
    guard = probe.get("value_guarded")
    if guard and out.get("status") == "confirmed" and out.get("symptom") in VALUE_ONLY:
        return {
            **out,
            "status": "refuted",
            "detail": f"{out.get('detail', '')}; but that value is never selected: {guard}",
        }
    reason = probe.get("no_gradient")
    if out.get("status") == "confirmed" and out.get("symptom") in GRADIENT_ONLY and not reason:
        reason = labels_only_reason(out, probe)
    if not reason or out.get("status") != "confirmed" or out.get("symptom") not in GRADIENT_ONLY:
        return out
    statement = statement_value_symptom(out)
    if statement:
        flows = "is likely to flow" if probe.get("no_gradient_likely") else "flows"
        return {
            **out,
            "symptom": "nan-value" if statement == "nan" else "inf-value",
            "detail": (
                f"{out.get('detail', '')}; no gradient {flows} here ({reason}), but at that point "
                f"the enclosing statement's value is {statement}: a value symptom"
            ),
        }
    if probe.get("no_gradient_likely"):
        return {
            **out,
            "status": "inconclusive",
            "detail": f"{out.get('detail', '')}; conditional: {reason}",
        }
    return {
        **out,
        "status": "refuted",
        "detail": f"{out.get('detail', '')}; but no gradient flows here: {reason}",
    }
