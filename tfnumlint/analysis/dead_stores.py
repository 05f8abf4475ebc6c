"""Dead stores and the reads of a value: a flagged value overwritten before anything reads it
reaches nothing, so no symptom of it can matter (:func:`overwritten_reason`); the slicer's
sink search reads the same facts (:func:`reads_of`, :func:`statements_after`).  Static only.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from .guards import (
    names_in,
)
from .module import Scope
from .names import children

OpOf = Callable[[cst.BaseExpression], "str | None"]


def module_scope(scope: Scope) -> Scope:
    while scope.parent is not None:
        scope = scope.parent
    return scope


def assigned_name(scope: Scope, statement: cst.CSTNode) -> tuple[str, cst.FunctionDef] | None:
    """``name = ...`` in a function body: the name and the function, else None."""
    if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1):
        return None
    target = statement.targets[0].target
    fn = scope.node if scope.kind == "function" else None
    if not (isinstance(target, cst.Name) and isinstance(fn, cst.FunctionDef)):
        return None
    return target.value, fn


def overwritten_reason(scope: Scope, statement: cst.CSTNode, op: OpOf) -> str | None:
    """``p = a / norm(a)`` followed, in the same block and before any read of ``p``, by another
    plain ``p = ...``: the flagged value is never used, so neither its value nor its gradient
    reaches anything.  A read inside a nested block, or any other statement that names ``p``
    (an augmented assignment, a loop), counts as a use.  ``op`` resolves a callee to a
    registered TF op (None for anything else)."""
    assigned = assigned_name(scope, statement)
    if assigned is None:
        return None
    name, fn = assigned
    assert isinstance(statement, cst.Assign)
    if _has_side_effect(statement.value, op):
        return None  # `v = var.assign(a / b)`: the update happens whatever `v` becomes
    following = statements_after(fn.body, statement)
    if following is None:
        return None
    for line in following:
        if not isinstance(line, cst.SimpleStatementLine):
            if name in names_in(line):
                return None  # read, or rebound only on some paths
            continue
        for small in line.body:
            if (
                isinstance(small, cst.Assign)
                and assigns_only(small, name)
                and name not in names_in(small.value)
            ):
                return f"`{name}` is assigned again before any use: its value is never read"
            if name in names_in(small):
                return None
    return None


def _has_side_effect(value: cst.CSTNode, op: OpOf) -> bool:
    """Any call but a registered TF op may act (``var.assign(x)``, ``opt.apply_gradients``, a
    project helper that logs): what it is named says nothing, so only a known op is pure."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call) and op(node.func) is None:
            return True
        stack.extend(children(node))
    return False


def reads_of(node: cst.CSTNode, name: str) -> list[cst.Name]:
    """Every ``Name`` node reading ``name`` under ``node`` (:func:`reads`'s exclusions)."""
    return [n for n in reads(node) if n.value == name]


def reads(node: cst.CSTNode) -> list[cst.Name]:
    """Every ``Name`` node read under ``node``: assignment targets, attribute names
    ``x.name`` and keywords ``f(name=...)`` excluded."""
    out: list[cst.Name] = []
    stack: list[tuple[cst.CSTNode, bool]] = [(node, False)]
    while stack:
        current, is_target = stack.pop()
        if isinstance(current, cst.Name) and not is_target:
            out.append(current)
        if isinstance(current, cst.AssignTarget):
            stack.append((current.target, True))
            continue
        if isinstance(current, cst.Attribute):
            stack.append((current.value, is_target))
            continue
        if isinstance(current, cst.Arg) and current.keyword is not None:
            stack.append((current.value, False))
            continue
        stack.extend((child, is_target) for child in children(current))
    return out


def assigns_only(assign: cst.Assign, name: str) -> bool:
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
        stack.extend(children(node))
    return None


def string_value(node: cst.CSTNode) -> str | None:
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
        stack.extend((child, node, parent) for child in children(node))
    return out
