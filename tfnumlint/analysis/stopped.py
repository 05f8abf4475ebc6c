"""Values no gradient reaches: computed from ``tf.stop_gradient`` (a distillation teacher's
output, a target built from the model's own detached predictions), or made only from constants
and shapes (``tf.eye(n) / d`` with ``d`` a size: no variable reaches it, :func:`constant_made`),
or cast from whole numbers and booleans TF does not differentiate (``tf.cast(argmax(s), dt)``).

A gradient symptom with respect to such a value (a dead or NaN gradient "of the target's
logits") is one the program never computes: training differentiates nothing through it.  The
slicer marks a cut input with the stopping call it found (``spec["stopped"]``), or with the
shape and pattern calls it is made from (``spec["constant"]``); the gradient gate reads them
(``verify/gradient_gate.labels_only_reason``).  Code facts only: the op registry's gradient
sinks and sources, followed through value-preserving ops and assignments, and the library
calls whose value no argument's gradient reaches.
"""

from __future__ import annotations

import libcst as cst

from .. import ops
from .call_ranges import _callee_word, _library_call
from .discrete import discrete_expr
from .module import Binding
from .names import dotted_name
from .slicing.uses import SHAPE_ATTRS, SHAPE_CALLS

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


# -- values made only from constants and shapes -----------------------------------------------

# Library calls whose value no argument's gradient reaches: the shape readers (their argument
# gives only its shape), an identity pattern, a range of whole numbers, a static dimension.
_SHAPE_MADE = SHAPE_CALLS | {"eye", "range", "dimension_value"}


def constant_made(ctx, node: cst.BaseExpression, scope, order: int) -> str | None:
    """The calls a value is made from when it is made only from constants and shapes (``tf.eye
    (n)``, ``tf.shape(x)[0]``, ``x.shape[-1]``, ``tf.range``, ``tf.ones``, literals, and casts and
    arithmetic of those), so that no gradient reaches it; None otherwise.  Followed: names to
    every binding, registered TF ops on all their arguments, and the module's functions and
    the class's own methods (on ``self``) to every ``return``."""
    made = _Made(ctx)
    if not made.of(node, scope, order, 0):
        return None
    return ", ".join(f"`{m}`" for m in dict.fromkeys(made.makers)) or "literals"


class _Made:
    """One walk of :func:`constant_made`: the shape and pattern calls it met."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.makers: list[str] = []
        self.seen: set[int] = set()

    def of(self, node: cst.BaseExpression, scope, order: int, depth: int) -> bool:
        if depth > MAX_DEPTH:
            return False
        if id(node) in self.seen:
            return True  # a value that feeds itself (`d = d * 2`): its other parts decide
        self.seen.add(id(node))
        if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
            return True
        if self._whole(node, scope, order):  # `argmax(s)`, `a > b`, `cast(i, tf.int32)`
            return True
        if isinstance(node, (cst.Subscript, cst.UnaryOperation)):  # an entry, a negation
            inner = node.value if isinstance(node, cst.Subscript) else node.expression
            return self.of(inner, scope, order, depth + 1)
        if isinstance(node, cst.BinaryOperation):
            return self.of(node.left, scope, order, depth + 1) and self.of(
                node.right, scope, order, depth + 1
            )
        if isinstance(node, (cst.Tuple, cst.List)):
            return all(self.of(e.value, scope, order, depth + 1) for e in node.elements)
        if isinstance(node, cst.Attribute):  # `x.shape`, `x.dtype`, `tf.float32`, `np.pi`
            return node.attr.value in SHAPE_ATTRS or _library_call(self.ctx, node)
        if isinstance(node, cst.Name):
            return self._name(node, scope, order, depth)
        if isinstance(node, cst.Call):
            return self._call(node, scope, order, depth)
        return False

    def _whole(self, node: cst.BaseExpression, scope, order: int) -> bool:
        """A whole number or a boolean of a TF op (a comparison, ``argmax``, a rounding, a cast
        to an integer dtype): TF differentiates none of them, so nothing before it gets a
        gradient through it, whatever it is computed from."""
        if isinstance(node, cst.Comparison):
            self.makers.append("a comparison")
            return True
        if not isinstance(node, cst.Call) or not _library_call(self.ctx, node.func):
            return False
        if not discrete_expr(node, scope, order, self.ctx.ev.lookup):
            return False
        self.makers.append(dotted_name(node.func))
        return True

    def _name(self, node: cst.Name, scope, order: int, depth: int) -> bool:
        if node.value in ("True", "False", "None"):
            return True
        if not isinstance(self.ctx.ev.lookup(node.value, scope, order), Binding):
            return False  # a parameter, an import, a global: anything may come in
        for found in scope.bindings_of(node.value):
            value = found.value if found.index is None else found.element()
            if value is None or not self.of(value, found.scope, found.at, depth + 1):
                return False
        return True

    def _call(self, node: cst.Call, scope, order: int, depth: int) -> bool:
        ctx = self.ctx
        if _library_call(ctx, node.func) and _callee_word(node.func) in _SHAPE_MADE:
            self.makers.append(dotted_name(node.func))
            return True
        entry = ops.REGISTRY.get(ctx.info.imports.op(node.func) or "")
        if entry is not None and entry.source is not None:  # a source: weights, data, a draw
            if entry.source != "literal" or entry.conversion:  # ... or `constant(x)`: x decides
                return entry.source == "literal" and self._args(node, scope, order, depth)
            self.makers.append(dotted_name(node.func))  # tf.ones(shape), zeros_like(x)
            return True
        if entry is not None:
            return self._args(node, scope, order, depth)
        fn = _callee(ctx, node, scope)
        if fn is None:
            return self._imported_whole(node)
        return bool(fn.returns) and all(
            self.of(value, fn, at, depth + 1) for at, value in fn.returns
        )

    def _imported_whole(self, node: cst.Call) -> bool:
        """A function of another module of the project whose every return is a whole number
        (``return tf.shape(x)``), as the index read its body: TF differentiates none."""
        project = getattr(self.ctx.ev, "project", None)
        dotted = dotted_name(node.func)
        if project is None or not dotted or project.whole(dotted) is None:
            return False
        self.makers.append(dotted)
        return True

    def _args(self, node: cst.Call, scope, order: int, depth: int) -> bool:
        return all(self.of(a.value, scope, order, depth + 1) for a in node.args)


def _callee(ctx, call: cst.Call, scope):
    """The module function, or the method of the caller's own class called on ``self``, that
    ``call`` runs; None for anything else (an import, another object's method)."""
    func = call.func
    if isinstance(func, cst.Name):
        local = scope.bindings_of(func.value) or func.value in getattr(scope, "params", {})
        return None if local else ctx.info.functions.get(func.value)
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
        return None
    cls = getattr(scope, "cls", None)
    if cls is None or scope.self_name != func.value.value or func.attr.value in cls.attrs:
        return None
    return cls.method_scopes.get(func.attr.value)
