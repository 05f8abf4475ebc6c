"""Values no gradient reaches: computed from ``tf.stop_gradient`` (a distillation teacher's
output, a target built from the model's own detached predictions).

A gradient symptom with respect to such a value (a dead or NaN gradient "of the target's
logits") is one the program never computes: training differentiates nothing through it.  The
slicer marks a cut input with the stopping call it found (``spec["stopped"]``); the gradient
gate reads it (``verify/gradient_gate.labels_only_reason``).  Code facts only: the op registry's
gradient sinks, followed through value-preserving ops and assignments.
"""

from __future__ import annotations

import libcst as cst

from .. import ops

MAX_DEPTH = 8


def stopped_by(ctx, node: cst.BaseExpression, scope, order: int, depth: int = 0) -> str | None:
    """The source of the gradient sink (``tf.stop_gradient(...)``) every differentiable part of
    ``node`` comes from, or None.  Followed: names to their one binding (in enclosing
    functions too), value-preserving calls (``reshape``, ``cast``) on their first argument,
    arithmetic with a number, a stopped value divided by a setting (``stopped / temperature``;
    never ``x / stopped``, whose numerator carries the gradient)."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(node, cst.Call):
        op = ctx.info.imports.op(node.func)
        if op in ops.GRADIENT_SINKS:
            return " ".join(ctx.code(node).split())
        if op in ops.VALUE_PRESERVING and node.args:
            return stopped_by(ctx, node.args[0].value, scope, order, depth + 1)
        return None
    if isinstance(node, cst.BinaryOperation):
        left = stopped_by(ctx, node.left, scope, order, depth + 1)
        right = stopped_by(ctx, node.right, scope, order, depth + 1)
        if left and right:
            return left
        if (
            left
            and isinstance(node.operator, cst.Divide)
            and not _tensor(ctx, node.right, scope, order)
        ):
            return left  # stopped / temperature: a setting scales it
        kept = left or right
        other = node.right if left else node.left
        return kept if kept and _number(ctx, other, scope, order) else None
    if isinstance(node, cst.Name):
        found = ctx.ev.lookup(node.value, scope, order)
        value = getattr(found, "value", None)
        if isinstance(value, cst.BaseExpression) and getattr(found, "index", None) is None:
            return stopped_by(ctx, value, found.scope, found.at, depth + 1)
    return None


def _number(ctx, node: cst.BaseExpression, scope, order: int) -> bool:
    """A literal or a value provenance knows as a constant."""
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    return ctx.ev.value(node, scope, order).const is not None


def _tensor(ctx, node: cst.BaseExpression, scope, order: int) -> bool:
    """A divisor that may carry a gradient: not a number, and not a plain parameter or
    setting that provenance knows no tensor of (a temperature passed in as a float)."""
    if _number(ctx, node, scope, order):
        return False
    val = ctx.ev.value(node, scope, order)
    return bool(val.tensor) or val.kind not in ("param", "unknown", "attr")
