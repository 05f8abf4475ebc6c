"""Which values are TensorFlow/Keras tensors, and which live on the host (numpy, Python numbers).

A division of two Python floats (steps per second from ``time.time()``), a numpy
normalisation, PyTorch or JAX code, or hyper-parameter arithmetic (``total_steps -
warmup_steps`` on Python ints) is not a TensorFlow numerics hazard: it never reaches a
gradient, and it follows numpy's or Python's rules, not TensorFlow's.  Arithmetic findings
therefore need a TensorFlow tensor among their operands (or, for a division, a denominator that
may be one).  The epsilon-constant rules TNL401/TNL402 are exempt: a Python constant is rounded
to float32/float16 when it meets a tensor, and that rounding is exactly their hazard.

:func:`origin` classifies an expression as ``"tf"``, ``"host"`` or ``"unknown"``; it follows
names through their assignments.  Static only: no TensorFlow import.
"""

from __future__ import annotations

import re

import libcst as cst

from .module import Binding, Scope
from .names import dotted_name

TF, HOST, UNKNOWN = "tf", "host", "unknown"
# Modules whose values live on the host.
_HOST_ROOTS = frozenset(
    {"numpy", "math", "time", "timeit", "datetime", "random", "torch", "jax", "scipy", "statistics"}
)
# Builtins that return Python numbers whatever their argument.
_NUMBER_BUILTINS = frozenset({"len", "int", "float", "round", "bool", "ord", "hash"})
# Builtins that keep the kind of their arguments.
_PASS_BUILTINS = frozenset({"abs", "min", "max", "sum", "pow", "divmod"})
# Methods that bring a tensor to the host.
_HOST_METHODS = frozenset({"numpy", "item", "tolist", "__len__"})
_MAX_DEPTH = 12


def _root(node: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(node, (cst.Attribute, cst.Call, cst.Subscript)):
        node = node.func if isinstance(node, cst.Call) else node.value
    return node


def _module_of(ctx, node: cst.BaseExpression) -> str | None:
    """The imported module a Name/Attribute chain starts from (``np.log`` -> ``numpy``)."""
    root = _root(node)
    if not isinstance(root, cst.Name):
        return None
    dotted = ctx.info.imports.aliases.get(root.value)
    return dotted.split(".")[0] if dotted else None


def _combine(kinds: list[str]) -> str:
    if TF in kinds:
        return TF
    if kinds and all(k == HOST for k in kinds):
        return HOST
    return UNKNOWN


def origin(ctx, node: cst.BaseExpression, scope: Scope, order: int, depth: int = 0) -> str:
    """``"tf"``, ``"host"`` or ``"unknown"`` for the value of ``node``."""
    if depth > _MAX_DEPTH:
        return UNKNOWN
    if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString)):
        return HOST
    if isinstance(node, cst.UnaryOperation):
        return origin(ctx, node.expression, scope, order, depth + 1)
    if isinstance(node, cst.BinaryOperation):
        return _combine(
            [
                origin(ctx, node.left, scope, order, depth + 1),
                origin(ctx, node.right, scope, order, depth + 1),
            ]
        )
    if isinstance(node, (cst.List, cst.Tuple)):
        kinds = [origin(ctx, e.value, scope, order, depth + 1) for e in node.elements]
        return TF if TF in kinds else HOST
    if isinstance(node, cst.Subscript):
        return origin(ctx, node.value, scope, order, depth + 1)
    if isinstance(node, cst.Name):
        return _name(ctx, node, scope, order, depth)
    if isinstance(node, cst.Attribute):
        return _attribute(ctx, node, scope, order, depth)
    if isinstance(node, cst.Call):
        return _call(ctx, node, scope, order, depth)
    return UNKNOWN


def _name(ctx, node: cst.Name, scope: Scope, order: int, depth: int) -> str:
    if node.value in ("True", "False", "None"):
        return HOST
    found = ctx.ev.lookup(node.value, scope, order)
    if isinstance(found, Binding):
        if found.value is None or found.index is not None:
            return UNKNOWN
        return origin(ctx, found.value, found.scope, found.at, depth + 1)
    if isinstance(found, cst.Param):
        annotation = found.annotation.annotation if found.annotation else None
        if isinstance(annotation, cst.Name) and annotation.value in ("int", "float", "bool"):
            return HOST
        return UNKNOWN
    module = _module_of(ctx, node)
    if module in _HOST_ROOTS:
        return HOST
    return UNKNOWN


def _attribute(ctx, node: cst.Attribute, scope: Scope, order: int, depth: int) -> str:
    if ctx.info.imports.resolve(node) is not None:
        return TF
    if _module_of(ctx, node) in _HOST_ROOTS:
        return HOST
    value = node.value
    if isinstance(value, cst.Name) and scope.cls is not None:
        s: Scope | None = scope
        while s is not None and s.kind != "function":
            s = s.parent
        if s is not None and s.self_name == value.value:
            bindings = scope.cls.attrs.get(node.attr.value) or []
            kinds = [
                origin(ctx, b.value, b.scope, b.at, depth + 1)
                for b in bindings
                if b.value is not None
            ]
            if kinds and len(kinds) == len(bindings):
                return _combine(kinds) if TF not in kinds else TF
    if origin(ctx, value, scope, order, depth + 1) == HOST:
        return HOST  # a field of a Python object (`log[-1].timestamp` of a list of records)
    return UNKNOWN


def _call(ctx, node: cst.Call, scope: Scope, order: int, depth: int) -> str:
    func = node.func
    if ctx.info.imports.resolve(func) is not None:
        return TF
    if _module_of(ctx, func) in _HOST_ROOTS:
        return HOST
    if isinstance(func, cst.Name) and ctx.ev.lookup(func.value, scope, order) is None:
        if func.value in _NUMBER_BUILTINS:
            return HOST
        if func.value in _PASS_BUILTINS:
            return _combine([origin(ctx, a.value, scope, order, depth + 1) for a in node.args])
    if isinstance(func, cst.Attribute) and func.attr.value in _HOST_METHODS:
        return HOST
    return UNKNOWN


def hazard_operand(node: cst.CSTNode) -> cst.BaseExpression | None:
    """The operand whose value makes the hazard: the denominator of a division."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        return node.right
    return None


def host_reason(ctx, node: cst.CSTNode, scope: Scope, order: int) -> str | None:
    """Why an arithmetic finding is not a TensorFlow hazard, or None when it may be one."""
    if not isinstance(node, cst.BinaryOperation):
        return None
    denominator = hazard_operand(node)
    if denominator is not None and origin(ctx, denominator, scope, order) == HOST:
        return "its denominator is a Python/numpy value"
    whole = origin(ctx, node, scope, order)
    if whole == HOST:
        return "every operand is a Python/numpy value"
    if whole == UNKNOWN and _has_host_leaf(ctx, node, scope, order) and not calls_tf(ctx, scope):
        return "Python arithmetic (len(), counters) in a function that never calls TensorFlow"
    if whole == UNKNOWN:
        return callback_reason(ctx, scope)
    return None


# Keras callback hooks: `on_epoch_end`, `on_train_batch_begin`, ...
_HOOK = re.compile(r"^on_\w+$")


def callback_reason(ctx, scope: Scope) -> str | None:
    """A Keras ``Callback`` runs on the host between steps: its arithmetic on timings, logs and
    counters is Python's (a zero division raises, it never gives inf).  A hook method is host
    code unless an operand is a tensor (checked by the caller); any other method of the class
    is, when it calls no TensorFlow at all."""
    fn: Scope | None = scope
    while fn is not None and fn.kind != "function":
        fn = fn.parent
    if fn is None or fn.cls is None:
        return None
    written = [dotted_name(b.value) for b in fn.cls.node.bases]
    bases = [b.rsplit(".", 1)[-1] for b in (*fn.cls.bases, *written) if b]
    if not any(b.endswith("Callback") for b in bases):
        return None
    if _HOOK.match(fn.name):
        return f"host arithmetic in the Keras callback hook `{fn.name}`"
    if not calls_tf(ctx, scope):
        return (
            f"host arithmetic in the Keras callback method `{fn.name}`, which calls no TensorFlow"
        )
    return None


def _has_host_leaf(ctx, node: cst.BaseExpression, scope: Scope, order: int) -> bool:
    """Some operand is known to be a Python/numpy value (a `len()`, a `time.time()`)."""
    if isinstance(node, cst.BinaryOperation):
        return _has_host_leaf(ctx, node.left, scope, order) or _has_host_leaf(
            ctx, node.right, scope, order
        )
    if isinstance(node, cst.UnaryOperation):
        return _has_host_leaf(ctx, node.expression, scope, order)
    if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary)):
        return False  # a literal says nothing about the other operands
    return origin(ctx, node, scope, order) == HOST


def calls_tf(ctx, scope: Scope, module_level: bool = True) -> bool:
    """The function around ``scope`` calls TensorFlow/Keras somewhere; ``module_level`` is the
    answer outside any function (host-value checks assume TF there, epsilon rules do not)."""
    fn: Scope | None = scope
    while fn is not None and fn.kind != "function":
        fn = fn.parent
    if fn is None:
        return module_level
    for site in ctx.info.calls:
        s = site.scope
        while s is not None and s is not fn:
            s = s.parent
        if s is fn and ctx.info.imports.resolve(site.node.func) is not None:
            return True
    return False
