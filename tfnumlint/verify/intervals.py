"""Forward interval analysis over a traced graph, in the style of DEBAR (FSE'20).

Every tensor gets a closed interval [lo, hi] that over-approximates the values it can take in
the probe's dtype.  Float semantics are kept: bounds are rounded outward to the dtype and a
positive bound below the smallest normal number may flush to 0, so a float32 sigmoid really
reaches 0 and 1.  When no unsafe op's input reaches its danger zone the finding is refuted.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import ml_dtypes
import numpy as np
import tensorflow as tf
from tensorflow.python.framework import tensor_util

from .. import ops as ops_

INF = math.inf
TOP = (-INF, INF)
Interval = tuple[float, float]


def finfo(dtype: str):
    """numpy/ml_dtypes finfo for a dtype name (bfloat16 included)."""
    return ml_dtypes.finfo(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.finfo(dtype)


def np_dtype(dtype: str):
    return ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)


@dataclass
class Rounder:
    """Outward rounding of float64 bounds into the probe dtype, flush-to-zero aware."""

    dtype: str

    def down(self, v: float) -> float:
        if math.isnan(v):
            return -INF
        if math.isinf(v):
            return v
        info = finfo(self.dtype)
        if v > float(info.max):
            return float(info.max)
        if v < -float(info.max):
            return -INF
        r = float(np.asarray(v, dtype=np_dtype(self.dtype)).astype(np.float64))
        if r > v:
            r = float(
                np.nextafter(
                    np.asarray(r, np_dtype(self.dtype)), np.asarray(-INF, np_dtype(self.dtype))
                )
            )
        if 0 < r < float(info.smallest_normal):
            return 0.0  # may flush to zero
        return r

    def up(self, v: float) -> float:
        return -self.down(-v)

    def interval(self, lo: float, hi: float) -> Interval:
        if math.isnan(lo) or math.isnan(hi):
            return TOP
        return (self.down(lo), self.up(hi))


def hull(*ivs: Interval) -> Interval:
    return (min(i[0] for i in ivs), max(i[1] for i in ivs))


def _mul(a: float, b: float) -> float:
    if (a == 0 and math.isinf(b)) or (b == 0 and math.isinf(a)):
        return 0.0
    return a * b


def mul(x: Interval, y: Interval) -> Interval:
    products = [_mul(a, b) for a in x for b in y]
    return (min(products), max(products))


def div(x: Interval, y: Interval) -> Interval:
    if y[0] <= 0 <= y[1]:
        return TOP
    inv = (1 / y[1], 1 / y[0])
    return mul(x, inv)


def monotone(fn: Callable[[float], float]) -> Callable[[Interval], Interval]:
    """Lift an increasing scalar function to intervals."""

    def lifted(x: Interval) -> Interval:
        return (_safe(fn, x[0], -INF), _safe(fn, x[1], INF))

    return lifted


def _safe(fn: Callable[[float], float], v: float, fallback: float) -> float:
    try:
        r = fn(v)
    except (OverflowError, ValueError, ZeroDivisionError):
        return fallback
    return fallback if math.isnan(r) else r


def _sigmoid(v: float) -> float:
    if v >= 0:
        return 1 / (1 + math.exp(-v))
    e = math.exp(v)
    return e / (1 + e)


def _exp(v: float) -> float:
    return INF if v > 709 else math.exp(v)


def _log(v: float) -> float:
    if v <= 0:
        return -INF if v == 0 else math.nan
    return INF if math.isinf(v) else math.log(v)


def sum_of(x: Interval) -> Interval:
    """A sum of an unknown number (>= 1) of elements each in x."""
    lo = x[0] if x[0] >= 0 else -INF
    hi = x[1] if x[1] <= 0 else INF
    return (lo, hi)


def _sqrt(x: Interval) -> Interval:
    if x[1] < 0:
        return (INF, -INF)
    return (math.sqrt(max(x[0], 0.0)), math.sqrt(x[1]) if x[1] < INF else INF)


def _reciprocal(x: Interval) -> Interval:
    return div((1.0, 1.0), x)


def _abs(x: Interval) -> Interval:
    if x[0] >= 0:
        return x
    if x[1] <= 0:
        return (-x[1], -x[0])
    return (0.0, max(-x[0], x[1]))


def _square(x: Interval) -> Interval:
    a = _abs(x)
    return (_mul(a[0], a[0]), _mul(a[1], a[1]))


def _softplus(x: Interval) -> Interval:
    return (
        0.0 if x[0] < 30 else x[0],
        INF if x[1] > 30 else _safe(lambda v: math.log1p(math.exp(v)), x[1], INF),
    )


def _prod(x: Interval) -> Interval:
    if x[0] >= 0 and x[1] <= 1:
        return (0.0, 1.0)
    return (0.0, INF) if x[0] >= 0 else TOP


# Interval transfers by the name a registry entry gives (``interval="sqrt"``);
# "monotone:<f>" is f applied to both bounds, f from _MONOTONE or the math module.
UNARY_TRANSFERS: dict[str, Callable[[Interval], Interval]] = {
    "same": lambda x: x,
    "neg": lambda x: (-x[1], -x[0]),
    "abs": _abs,
    "square": _square,
    "relu": lambda x: (max(x[0], 0.0), max(x[1], 0.0)),
    "relu6": lambda x: (min(max(x[0], 0.0), 6.0), min(max(x[1], 0.0), 6.0)),
    "softplus": _softplus,
    "unit": lambda x: (0.0, 1.0),
    "nonpositive": lambda x: (-INF, 0.0),
    "nonnegative": lambda x: (0.0, INF),
    "sqrt": _sqrt,
    "rsqrt": lambda x: _reciprocal(_sqrt(x)),
    "reciprocal": _reciprocal,
    "sum": sum_of,
    "prod": _prod,
    "zero": lambda x: (0.0, 0.0),
    "one": lambda x: (1.0, 1.0),
    "top": lambda x: TOP,
    "acos": lambda x: (0.0, math.pi),
    "signed_unit": lambda x: (-1.0, 1.0),  # cos, sin
    "i0e": lambda x: (1e-20, 1.0),  # exp(-|x|) I0(x): positive, at most 1 (at 0)
    "i1e": lambda x: (-0.25, 0.25),  # |exp(-|x|) I1(x)| < 0.216
    "lgamma": lambda x: (-0.125, INF),  # min of log|Gamma| on the reals: -0.1215 at 1.46
    "asin": lambda x: (-math.pi / 2, math.pi / 2),
}
_MONOTONE: dict[str, Callable[[float], float]] = {
    "sigmoid": _sigmoid,
    "exp": _exp,
    "expm1": lambda v: _exp(v) - 1,
    "log": _log,
    "log1p": lambda v: _log(1 + v),
    "round": lambda v: float(round(v)),  # half to even, as tf.math.round
    "sign": lambda v: float((v > 0) - (v < 0)),
    "elu": lambda v: v if v > 0 else _exp(v) - 1,
    "selu": lambda v: 1.0507009873554805 * (v if v > 0 else 1.6732632423543772 * (_exp(v) - 1)),
}
BINARY_TRANSFERS: dict[str, Callable[[Interval, Interval], Interval]] = {
    "add": lambda x, y: (x[0] + y[0], x[1] + y[1]),
    "sub": lambda x, y: (x[0] - y[1], x[1] - y[0]),
    "mul": mul,
    "div": div,
    "div_no_nan": lambda x, y: hull(div(x, y) if not (y[0] <= 0 <= y[1]) else TOP, (0.0, 0.0)),
    "maximum": lambda x, y: (max(x[0], y[0]), max(x[1], y[1])),
    "minimum": lambda x, y: (min(x[0], y[0]), min(x[1], y[1])),
    "matmul": lambda x, y: sum_of(mul(x, y)),
}
# worked out by _op_interval from the op's structure (its operands' roles)
STRUCTURAL = frozenset({"structural"})
# graph op types that the tracer's own wrappers emit, with no canonical op of their own
_GRAPH_ONLY = {"BroadcastTo": "same"}


def unary_transfer(name: str) -> Callable[[Interval], Interval] | None:
    if name.startswith("monotone:"):
        fn = name.split(":", 1)[1]
        f = _MONOTONE.get(fn) or getattr(math, fn, None)
        return monotone(f) if f is not None else None
    return UNARY_TRANSFERS.get(name)


def has_transfer(name: str) -> bool:
    """Does an interval transfer of this name exist (the registry consistency test asks)?"""
    return name in STRUCTURAL or name in BINARY_TRANSFERS or unary_transfer(name) is not None


@dataclass
class _Tables:
    version: int
    unary: dict[str, Callable[[Interval], Interval]]
    binary: dict[str, Callable[[Interval, Interval], Interval]]
    ops: dict[str, ops_.Op]  # graph op type -> the canonical op it comes from


_tables: list[_Tables] = []


def tables() -> _Tables:
    """Graph op type -> transfer and -> canonical op, from the registry (rebuilt on a change)."""
    if _tables and _tables[0].version == ops_.version():
        return _tables[0]
    unary: dict[str, Callable[[Interval], Interval]] = {}
    binary: dict[str, Callable[[Interval, Interval], Interval]] = {}
    by_type: dict[str, ops_.Op] = {}
    named: list[tuple[str, str | None, ops_.Op | None]] = [
        (t, op.interval, op) for op in ops_.REGISTRY.values() for t in op.graph
    ]
    named += [(t, name, None) for t, name in _GRAPH_ONLY.items()]
    for t, name, op in named:
        if op is not None:
            by_type[t] = op
        if name in BINARY_TRANSFERS:
            binary[t] = BINARY_TRANSFERS[name]
        elif name is not None and (fn := unary_transfer(name)) is not None:
            unary[t] = fn
    _tables[:] = [_Tables(ops_.version(), unary, binary, by_type)]
    return _tables[0]


def _clean(iv: Interval) -> Interval:
    lo, hi = iv
    if math.isnan(lo) or math.isnan(hi):
        return TOP
    return (lo, hi)


def const_interval(op: tf.Operation) -> Interval:
    try:
        value = tensor_util.MakeNdarray(op.get_attr("value"))
    except (ValueError, TypeError):
        return TOP
    if value.size == 0 or not np.issubdtype(np.asarray(value).dtype, np.number):
        if value.dtype == ml_dtypes.bfloat16 and value.size:
            value = value.astype(np.float64)
        else:
            return TOP
    arr = np.asarray(value, dtype=np.float64)
    if np.isnan(arr).any():
        return TOP
    return (float(arr.min()), float(arr.max()))


def analyse(graph: tf.Graph, placeholders: dict[str, Interval], dtype: str) -> dict[str, Interval]:
    """Interval of every tensor (by name) in the graph, in topological (creation) order."""
    rounder = Rounder(dtype)
    out: dict[str, Interval] = {}
    for op in graph.get_operations():
        ins = [out.get(t.name, TOP) for t in op.inputs]
        if op.type in ("Select", "SelectV2") and len(ins) == 3:
            iv = select_interval(op, out, rounder)
        else:
            iv = _op_interval(op, ins, placeholders, rounder)
        for t in op.outputs:
            out[t.name] = iv
    return out


def _op_interval(
    op: tf.Operation, ins: list[Interval], placeholders: dict[str, Interval], rounder: Rounder
) -> Interval:
    t = op.type
    if t == "Placeholder":
        return placeholders.get(op.name, TOP)
    if t == "Const":
        return const_interval(op)
    if t == "Cast":
        return rounder.interval(*ins[0]) if op.outputs[0].dtype.is_floating else ins[0]
    if t in ("Select", "SelectV2") and len(ins) == 3:
        return hull(ins[1], ins[2])
    if t in ("ClipByValue",) and len(ins) == 3:
        return (max(ins[0][0], ins[1][0]), min(ins[0][1], ins[2][1]))
    if t == "ConcatV2":
        return hull(*ins[:-1]) if len(ins) > 1 else TOP
    if t in ("Pack", "AddN"):
        return hull(*ins) if t == "Pack" else sum_of(hull(*ins))
    table = tables()
    if t in table.unary and ins:
        iv = table.unary[t](ins[0])
    elif t in table.binary and len(ins) >= 2:
        iv = table.binary[t](ins[0], ins[1])
    else:
        return TOP
    iv = _clean(iv)
    if iv[0] > iv[1]:
        return iv  # empty: the op can never produce a real value
    if op.outputs and op.outputs[0].dtype.is_floating:
        return rounder.interval(*iv)
    return iv


# ---------------------------------------------------------------- where, refined by its condition

_COMPARE = {"Less": "<", "LessEqual": "<=", "Greater": ">", "GreaterEqual": ">="}
_NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_PASS_OPS = frozenset({"Identity", "BroadcastTo"})  # same values: the same tensor for a bound


def _source(t: tf.Tensor) -> tf.Tensor:
    while t.op.type in _PASS_OPS and t.op.inputs:
        t = t.op.inputs[0]
    return t


def _condition(t: tf.Tensor) -> tuple[tf.Tensor, str, tf.Tensor] | None:
    """(a, op, b): the boolean tensor ``t`` is ``a op b`` (a LogicalNot of one negated)."""
    t = _source(t)
    if t.op.type == "LogicalNot":
        inner = _condition(t.op.inputs[0])
        return (inner[0], _NEGATE[inner[1]], inner[2]) if inner else None
    op = _COMPARE.get(t.op.type)
    return (t.op.inputs[0], op, t.op.inputs[1]) if op else None


def narrowed(x: Interval, op: str, k: Interval) -> Interval:
    """x where ``x op k`` holds, k anywhere in its interval (a strict bound is kept closed:
    the interval is an over-approximation)."""
    if op in ("<", "<="):
        return (x[0], min(x[1], k[1]))
    return (max(x[0], k[0]), x[1])


def _above(k: float, rounder: Rounder) -> float:
    """The smallest value of the dtype above k; a subnormal one may flush to 0, so 0."""
    dt = np_dtype(rounder.dtype)
    up = rounder.up(k)
    if up == k:
        up = float(np.nextafter(np.asarray(k, dt), np.asarray(INF, dt)))
    return 0.0 if 0 < up < float(finfo(rounder.dtype).smallest_normal) else up


def _narrowed_strict(x: Interval, op: str, k: Interval, rounder: Rounder) -> Interval:
    """As :func:`narrowed`, a strict bound one step of the dtype inward: in float32 `x > 1`
    is x >= 1.0000001, so x - 1 stays away from 0."""
    lo, hi = narrowed(x, op, k)
    if op == ">" and lo == k[0] and math.isfinite(lo):
        lo = _above(lo, rounder)
    if op == "<" and hi == k[1] and math.isfinite(hi):
        hi = -_above(-hi, rounder)
    return rounder.interval(lo, hi) if lo <= hi else (lo, hi)


def select_interval(op: tf.Operation, out: dict[str, Interval], rounder: Rounder) -> Interval:
    """tf.where(c, a, b): the hull of its branches, each restricted by the condition under which
    it is chosen when c compares that branch's very tensor (`where(df <= 1, 2., df)`: df > 1)."""
    cond, then, other = op.inputs
    branches = [out.get(then.name, TOP), out.get(other.name, TOP)]
    found = _condition(cond)
    if found is not None:
        a, rel, b = found
        for i, (tensor, holds) in enumerate(((then, True), (other, False))):
            rel_i = rel if holds else _NEGATE[rel]
            src = _source(tensor)
            if _source(a) is src or _source(a).name == src.name:
                k = out.get(b.name, TOP)
                branches[i] = _narrowed_strict(branches[i], rel_i, k, rounder)
            elif _source(b).name == src.name:
                k = out.get(a.name, TOP)
                branches[i] = _narrowed_strict(branches[i], _FLIP[rel_i], k, rounder)
    live = [br for br in branches if br[0] <= br[1]]  # an empty branch is never chosen
    return hull(*live) if live else branches[0]


# ---------------------------------------------------------------- danger zones


def overflow_point(dtype: str) -> float:
    """The largest x whose exp is finite in the dtype (88.72 in float32, 11.09 in float16)."""
    return math.log(float(finfo(dtype).max))


def danger(op: tf.Operation, ivs: dict[str, Interval], dtype: str) -> tuple[bool, str, Interval]:
    """Does the op's relevant input reach its danger zone?  (touches, what it means, range)"""
    entry = tables().ops.get(op.type)
    zone = entry.danger if entry is not None else None
    if zone is None or zone.test == "branches":
        return False, "", TOP  # Select: its branches' own unsafe ops are checked directly
    ins = [ivs.get(x.name, TOP) for x in op.inputs]
    x = ins[zone.arg]
    if zone.test == "reaches":
        return x[0] <= zone.bound, zone.label, x
    if zone.test == "straddles":
        return x[0] <= zone.bound <= x[1], zone.label, x
    if zone.test == "overflows":
        return x[1] > overflow_point(dtype), zone.label, x
    if zone.test == "leaves_unit":
        return x[0] <= -1 or x[1] >= 1, zone.label, x
    if zone.test == "pow_base":
        expo = ins[1]
        integral = expo[0] == expo[1] and float(expo[0]).is_integer() and expo[0] >= 1
        return x[0] <= 0 and not integral, zone.label, x
    return False, zone.label, x  # "never": a guarded op (divide_no_nan)


def describe(op_type: str) -> str:
    """Human name of the input checked for an op type."""
    entry = tables().ops.get(op_type)
    what = entry.danger.what if entry is not None and entry.danger is not None else None
    return what or f"{op_type.lower()} input"
