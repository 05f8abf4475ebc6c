"""Where a gradient can flow: one decision for every rule and every verdict.

A NaN, inf, exploding or dead *gradient* only matters where something is differentiated.  A
*value* symptom (a NaN or inf in the forward result) matters wherever the code runs, so only
the gradient-only symptoms are gated, and only by code facts: a framework hook that is never
differentiated (an optimizer update, a metric update), ``tf.stop_gradient`` and other calls
that pass no gradient (a variable's ``assign`` too), a value whose every use ends in an integer
or boolean result (``discrete.py``), a dead store, and reachability (``roots.py``): no path from
the hazard to a differentiation root refutes; a function with no caller in the project, or one
mapped over a dataset, makes the symptom conditional (it holds only if a caller not in view
differentiates it).
Names of user functions, variables and files never decide.  The verdict side
(``verify/gradient_gate.apply``) applies that decision with a reason the user reads.  Plain
data only: no TensorFlow import.

The guards a value symptom is checked against live in ``guards.py``, dead stores in
``dead_stores.py``.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import libcst as cst

from .. import ops
from .dead_stores import (
    assigned_name,
    assigns_only,
    module_scope,
    reads_of,
    statements_after,
)
from .discrete import STEP_FUNCTIONS, integer_cast, only_discrete_reason
from .module import Scope, call_arg
from .names import children, dotted_name
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
    **ops.GRADIENT_SINKS,  # stop_gradient, check_numerics
    "scalar": "the value only feeds a summary",
    "histogram": "the value only feeds a summary",
    "print": "the value is only printed",
    "Print": "the value is only printed",
    "numpy_function": "the value goes through numpy_function (no gradient)",
    "py_function": "the value goes through py_function",
}
# tf.Variable's writes (`v.assign(x)`, also `tf.compat.v1.assign(v, x)`): TensorFlow defines no
# gradient for Assign, AssignAdd or AssignSub, so the value stored gets none back from them.
_STORE_METHODS = frozenset({"assign", "assign_add", "assign_sub"})
# the keywords of their signatures (a call with any other is some other object's method)
_STORE_KEYWORDS = frozenset(
    {"ref", "value", "delta", "use_locking", "name", "read_value", "validate_shape"}
)

Line = Callable[[cst.CSTNode], int | None]  # where a node starts (for a message)
Resolve = Callable[[cst.BaseExpression], str | None]  # a callee's TensorFlow path


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
            stack.extend((child, inner, diff) for child in children(node))


# root scope of a module -> its one walk (for modules with findings)
_WALKS: weakref.WeakKeyDictionary[Scope, _Walk] = weakref.WeakKeyDictionary()


def _walk_of(root: Scope) -> _Walk:
    """The walk of the module whose root scope is ``root`` (its node is the module)."""
    walk = _WALKS.get(root)
    if walk is None:
        assert isinstance(root.node, cst.Module)  # every caller checks it first
        walk = _WALKS[root] = _Walk(root.node)
    return walk


def _custom_gradient_regions(walk: _Walk) -> dict[int, str]:
    """id(function or lambda node) -> why its autodiff gradient is never taken.

    The decorated function and the forward passed to ``custom_gradient`` have their gradient
    replaced; the gradient rules (``vjp_bwd``, ``jvp_fn``) are themselves derivatives, whose own
    gradient is a second derivative nobody takes; a private module function referenced only
    from such code inherits it (to a fixed point)."""
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
    root = module_scope(scope)
    module = root.node
    if not isinstance(module, cst.Module):
        return None
    regions = _REGIONS.get(root)
    if regions is None:
        regions = _REGIONS[root] = _custom_gradient_regions(_walk_of(root))
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


def stored_value(call: cst.Call, resolve: Resolve | None = None) -> cst.BaseExpression | None:
    """The value ``call`` writes into a variable, or None: ``var.assign(x)``, ``assign_add``,
    ``assign_sub`` with tf.Variable's signature (one value), or TensorFlow's function of the
    variable, ``tf.compat.v1.assign(var, x)`` (its callee resolves through the imports)."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in _STORE_METHODS:
        return None
    if any(a.star or (a.keyword and a.keyword.value not in _STORE_KEYWORDS) for a in call.args):
        return None
    index = 1 if resolve is not None and resolve(func) is not None else 0
    positional = [a.value for a in call.args if a.keyword is None]
    keyword = [a.value for a in call.args if a.keyword and a.keyword.value in ("value", "delta")]
    if keyword and len(positional) == index:
        return keyword[0]
    return positional[index] if len(positional) == index + 1 and not keyword else None


def _store_reason(call: cst.Call, line: Line | None) -> str:
    at = line(call) if line is not None else None
    where = f" at line {at}" if at else ""
    return (
        f"its value only reaches `{dotted_name(call.func)}(...)`{where}, which passes no gradient"
    )


def enclosing_call_reason(
    statement: cst.CSTNode,
    node: cst.CSTNode,
    resolve: Resolve | None = None,
    line: Line | None = None,
) -> str | None:
    """The node sits inside the arguments of a call that blocks or never takes gradients, or in
    the value a variable stores (``resolve``: a callee's TensorFlow path; ``line``: where a
    node starts, for the message)."""
    stack: list[tuple[cst.CSTNode, str | None]] = [(statement, None)]
    while stack:
        current, reason = stack.pop()
        if current is node:
            return reason
        if isinstance(current, cst.Call) and (stored := stored_value(current, resolve)) is not None:
            why = _store_reason(current, line)
            for child in children(current):
                value = child.value if isinstance(child, cst.Arg) else child
                stack.append((child, why if value is stored else reason))
            continue
        if isinstance(current, cst.Call):
            name = dotted_name(current.func)
            last = name.rsplit(".", 1)[-1]
            if _NO_GRAD_CALL.search(name) and (last != "scalar" or "summary" in name):
                if last.startswith("assert"):
                    reason = f"the value only feeds the assertion `{name}`"
                else:
                    reason = _NO_GRAD_CALL_REASON.get(last, f"the value only feeds `{name}`")
            elif last in STEP_FUNCTIONS or integer_cast(current, last):
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
        for child in children(current):
            stack.append((child, reason))
    return None


# Ops whose gradient is None or zero: their result is an integer, a boolean or piecewise constant.
# (registered ones: ops.STEP_FUNCTIONS; the rest are names the registry does not hold)


def probe_reason(probe: dict[str, Any] | None) -> str | None:
    """Every free input of the slice is a random draw (its producer is a random op)."""
    if not probe or probe.get("kind") != "expr":
        return None
    inputs = probe.get("inputs") or []
    if inputs and all(spec.get("producer") == "random" for spec in inputs):
        return "its inputs are random draws (a sampler)"
    return None


@dataclass(frozen=True)
class NoGradient:
    """Why no gradient flows at a finding.

    ``certain``: the code itself rules a gradient out (an optimizer step, ``stop_gradient``, a
    value rounded to an integer, no path to a differentiation root), so a gradient-only
    confirmation is refuted.  Otherwise (a function mapped over a dataset, or one with no
    caller in the project) a caller not in view may still differentiate it, so the
    confirmation only becomes inconclusive, with the reason as its condition."""

    reason: str
    certain: bool = True


def no_gradient(
    scope: Scope,
    statement: cst.CSTNode,
    node: cst.CSTNode,
    path: str,
    probe: dict | None,
    imported: Callable[[str], bool] | None = None,
    discrete_call: Callable[[str], bool] | None = None,
    resolve: Resolve | None = None,
    line: Line | None = None,
) -> NoGradient | None:
    """The one decision of where gradients flow: why none does at this finding, or None.

    Code facts refute (a framework hook, stop_gradient, a variable store, an integer result,
    no path to a differentiation root); a function mapped over a dataset, or one with no
    caller in the project, makes the gradient symptom conditional (inconclusive): it holds
    only if a caller the project does not show differentiates it.  ``resolve`` and ``line``
    tell a TensorFlow callee and where a sink is (:func:`enclosing_call_reason`)."""

    def sink(stmt: cst.CSTNode, at: cst.CSTNode) -> str | None:
        return enclosing_call_reason(stmt, at, resolve, line)

    certain = (
        context_of_scope(scope, path)
        or sink(statement, node)
        or gradient_free_uses_reason(scope, statement, sink)
        or probe_reason(probe)
        or (
            only_discrete_reason(scope, statement, node, discrete_call, sink, imported)
            if discrete_call is not None
            else None
        )
    )
    if certain:
        return NoGradient(certain)
    found = reach(scope, statement, imported or _nothing_imported)
    if found.path is ReachPath.UNREACHED:
        return NoGradient(found.fact)
    if found.path is ReachPath.REACHED:
        return None
    likely = dataset_map_reason(scope)
    if not likely and found.path is ReachPath.FREE:
        likely = found.fact
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


def _dataset_map_regions(walk: _Walk) -> dict[int, str]:
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
    root = module_scope(scope)
    if not isinstance(root.node, cst.Module):
        return None
    regions = _ELEMENTS.get(root)
    if regions is None:
        walk = _walk_of(root)
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
    root = module_scope(scope)
    if not isinstance(root.node, cst.Module):
        return None
    regions = _MAPPED.get(root)
    if regions is None:
        regions = _MAPPED[root] = _dataset_map_regions(_walk_of(root))
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


def gradient_free_uses_reason(
    scope: Scope,
    statement: cst.CSTNode,
    sink: Callable[[cst.CSTNode, cst.CSTNode], str | None] = enclosing_call_reason,
) -> str | None:
    """``v = tf.norm(...)`` whose every later read (up to a reassignment in the same block)
    only feeds a comparison, an integer cast, ``argmax``, ``round``, ``stop_gradient``, a
    summary or a variable's ``assign``: a leader score compared with ``>=``, a data-dependent
    init.  No gradient flows back into ``v`` (``sink``: why one read takes none)."""
    assigned = assigned_name(scope, statement)
    if assigned is None:
        return None
    name, fn = assigned
    following = statements_after(fn.body, statement)
    if not following:
        return None
    why: list[str] = []
    for line in following:
        for read in reads_of(line, name):
            reason = sink(line, read)
            if reason is None:
                return None
            why.append(reason)
        if isinstance(line, cst.SimpleStatementLine) and any(
            isinstance(small, cst.Assign) and assigns_only(small, name) for small in line.body
        ):
            break  # rebound: later reads see another value
    if not why:
        return None
    return f"every use of `{name}` is gradient-free ({why[0]})"
