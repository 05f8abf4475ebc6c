"""Host constants: the numbers a slice keeps as numbers, not as free inputs probing would set
to 0 or 100 (``np.log(2.)``, ``np.sqrt(2 / np.pi)``, ``float("-inf")``, ``np.NINF``,
``tf.constant(np.inf)``, ``tf.fill(tf.shape(s), -np.inf)``).  Mixed into
:class:`~.slicer.Slicer`; static, no TensorFlow.
"""

from __future__ import annotations

import math
from typing import Any, cast

import libcst as cst
import numpy as np

from ..context import Context
from ..module import Binding, Scope
from ..values import literal_number

NUMERIC_CONSTANTS = {
    (module, name): value
    for module in ("numpy", "math")
    for name, value in (("inf", math.inf), ("nan", math.nan), ("pi", math.pi), ("e", math.e))
} | {("numpy", "euler_gamma"): 0.5772156649015329, ("math", "tau"): math.tau}
# NumPy's older spellings of infinity (``np.NINF`` is -inf; removed in NumPy 2, common before)
NUMERIC_CONSTANTS |= {("numpy", name): math.inf for name in ("Inf", "Infinity", "PINF", "infty")}
NUMERIC_CONSTANTS[("numpy", "NINF")] = -math.inf
# numpy/math functions a host constant may be computed with (np.log(2.), np.sqrt(2 / np.pi)):
# evaluated on literal numbers only, never on user values, so the slice keeps a number, not
# a free input that probing would set to 0 or 100.
HOST_FUNCTIONS: dict[str, Any] = {
    "log": math.log,
    "log1p": math.log1p,
    "log2": math.log2,
    "log10": math.log10,
    "sqrt": math.sqrt,
    "exp": math.exp,
    "expm1": math.expm1,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "tanh": math.tanh,
    "arctan": math.atan,
    "atan": math.atan,
    "abs": abs,
    "fabs": abs,
    "float": float,
    "float16": float,
    "float32": float,
    "float64": float,
    "array": float,
    "asarray": float,
    "lgamma": math.lgamma,
    "gamma": math.gamma,
}
HOST_BINOPS: dict[type, Any] = {
    cst.Add: lambda a, b: a + b,
    cst.Subtract: lambda a, b: a - b,
    cst.Multiply: lambda a, b: a * b,
    cst.Divide: lambda a, b: a / b,
    cst.Power: lambda a, b: a**b,
}
# TF/NumPy/Keras calls that fill a tensor with one value, and which argument that value is: a
# host constant filled is that constant (the shape is only a shape: the probe broadcasts it)
FILLS = {"fill": 1, "full": 1, "full_like": 1, "broadcast_to": 0}


def host_function(func: cst.BaseExpression, aliases: dict[str, str]):
    """`np.log`, `math.sqrt`, `numpy.float32`, `float`: the Python function that computes it."""
    if isinstance(func, cst.Name):
        return HOST_FUNCTIONS.get(func.value) if func.value in ("float", "abs") else None
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        module = aliases.get(func.value.value) or ""
        if module in ("numpy", "math"):
            return HOST_FUNCTIONS.get(func.attr.value)
    return None


def host_eval(fn, *args: float) -> float | None:
    try:
        value = float(fn(*args))
    except (ArithmeticError, ValueError, TypeError):
        return None
    return value if math.isfinite(value) or any(math.isinf(a) for a in args) else None


def builtin_float_of_text(node: cst.Call, aliases: dict[str, str]) -> bool:
    """``float("inf")``, ``float("-inf")``, ``float("nan")``: Python's own spelling of the
    non-finite constants (``float`` not rebound by an import)."""
    if len(node.args) != 1 or not isinstance(node.func, cst.Name) or node.func.value != "float":
        return False
    text = node.args[0].value
    if "float" in aliases or not isinstance(text, cst.SimpleString):
        return False
    value = text.evaluated_value
    return isinstance(value, str) and value.strip().lower() in ("inf", "-inf", "+inf", "nan")


def _float32_op(op: str | None):
    """A TF math op on a host number (``tf.sqrt(in_dim / 2.0)``): computed as TF computes a
    Python number, in float32 (``tf.exp(100.)`` is inf, not 2.7e43)."""
    if op not in HOST_FUNCTIONS or op == "float" or not hasattr(np, op):
        return None
    fn = getattr(np, op)
    return lambda x: float(fn(np.float32(x)))


def _literal_item(node: cst.Subscript) -> cst.BaseExpression | None:
    """The element a whole-number index picks from a literal list or tuple."""
    elements = cast(cst.List | cst.Tuple, node.value).elements
    if len(node.slice) != 1 or any(isinstance(e, cst.StarredElement) for e in elements):
        return None
    index = node.slice[0].slice
    if not isinstance(index, cst.Index) or not isinstance(index.value, cst.Integer):
        return None
    at = int(index.value.value)
    return elements[at].value if -len(elements) <= at < len(elements) else None


class HostConstants:
    """The slicer's reading of host constants, mixed into :class:`~.slicer.Slicer`."""

    ctx: Context
    # fold a TF math op of a host number too (``tf.sqrt(in_dim / 2.0)``): for the numbers the
    # training rung reads (an initializer's spread), not a probe's tree, which keeps the op
    fold_tf_math = False

    def op_of(self, node: cst.Call) -> str | None:
        raise NotImplementedError

    def _host_constant(
        self, node: cst.BaseExpression, depth: int = 0, where: tuple[Scope, int] | None = None
    ) -> float | None:
        """The number a host expression of literals computes (`np.log(2.)`, `np.sqrt(2 / np.pi)`,
        `tf.constant(np.inf)`), or None: only literals, numpy/math constants and functions;
        with ``where`` (the expression's scope and order), also names of constant numbers
        (`np.sqrt(D)` with `D = 16`)."""
        if depth > 12:
            return None
        if isinstance(node, cst.Name) and where is not None and depth > 0:
            if not isinstance(self.ctx.ev.lookup(node.value, *where), Binding):
                return None  # a parameter: its argument's, at each call
            const = self.ctx.ev.value(node, *where).const
            return float(const) if isinstance(const, (int, float)) else None
        if isinstance(node, (cst.Integer, cst.Float)):
            try:
                return literal_number(node)
            except (ValueError, OverflowError):
                return None
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            inner = self._host_constant(node.expression, depth + 1, where)
            return -inner if inner is not None else None
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
            module = self.ctx.info.imports.aliases.get(node.value.value) or ""
            return NUMERIC_CONSTANTS.get((module, node.attr.value))
        if isinstance(node, cst.BinaryOperation) and type(node.operator) in HOST_BINOPS:
            a = self._host_constant(node.left, depth + 1, where)
            b = self._host_constant(node.right, depth + 1, where)
            if a is None or b is None:
                return None
            return host_eval(HOST_BINOPS[type(node.operator)], a, b)
        if isinstance(node, cst.Call) and node.args and node.args[0].keyword is None:
            first = node.args[0].value
            if builtin_float_of_text(node, self.ctx.info.imports.aliases):
                return float(cast(cst.SimpleString, first).evaluated_value)
            filled = self._filled(node)
            if filled is not None:  # tf.fill(tf.shape(s), -np.inf): -inf, whatever the shape
                return self._host_constant(filled, depth + 1, where)
            extra = [a for a in node.args[1:] if a.keyword is None or a.keyword.value != "dtype"]
            if extra:
                return None
            if self.op_of(node) in ("constant", "convert_to_tensor"):
                return self._host_constant(first, depth + 1, where)
            fn = host_function(node.func, self.ctx.info.imports.aliases)
            if fn is None and self.fold_tf_math:
                fn = _float32_op(self.op_of(node))
            if fn is None:
                return None
            value = self._host_constant(first, depth + 1, where)
            return host_eval(fn, value) if value is not None else None
        if isinstance(node, cst.Subscript) and isinstance(node.value, (cst.List, cst.Tuple)):
            item = _literal_item(node)  # ``[784, 128][0]``: an inlined helper's ``size[0]``
            return self._host_constant(item, depth + 1, where) if item is not None else None
        return None

    def _filled(self, node: cst.Call) -> cst.BaseExpression | None:
        """The value a TF/NumPy/Keras fill call repeats (``tf.fill(dims, v)``, ``np.full``)."""
        module = self.ctx.info.imports.path(node.func).split(".")[0]
        at = FILLS.get(node.func.attr.value) if isinstance(node.func, cst.Attribute) else None
        if at is None or module not in ("tensorflow", "numpy", "keras", "jax"):
            return None
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        return positional[at] if at < len(positional) else None
